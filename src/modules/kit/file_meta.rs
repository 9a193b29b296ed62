//! What `stat` returns of a path beyond the file fact: numeric owner and
//! group, inode, device, links, times, blocks, the file type and what the
//! connecting user may do with it. No prediction can know these after a
//! write (a new inode, new times), so a run forgets this fact whenever a
//! task predicts the path's file fact: a `stat` after a write in apply reads
//! it again once the write ran, and in check mode reads the path as it is.

use super::fact::{self, Fact};
use super::files::FileFact;
use super::plan::ModuleError;
use crate::base::shell::quote;
use crate::remote::probe::ProbeResult;

const PREFIX: &str = "file-meta:";

/// The file meta fact a prediction of the fact `key` leaves stale: the
/// one of the path whose file fact it is.
pub(crate) fn stale_after(key: &str) -> Option<String> {
    key.strip_prefix(&FileFact::key("")).map(FileMetaFact::key)
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileMeta {
    pub uid: u64,
    pub gid: u64,
    pub inode: u64,
    pub dev: u64,
    pub nlink: u64,
    pub blocks: u64,
    pub block_size: u64,
    /// `st_rdev`, of a device file.
    pub device_type: u64,
    pub atime: f64,
    pub mtime: f64,
    pub ctime: f64,
    /// `stat`'s `%F`: "regular file", "directory", "fifo"...
    pub file_type: String,
    pub readable: bool,
    pub writeable: bool,
    pub executable: bool,
}

pub(crate) struct FileMetaFact;

impl Fact for FileMetaFact {
    type Query = str;
    type Value = Option<FileMeta>;

    fn key(path: &str) -> String {
        format!("{PREFIX}{path}")
    }

    /// Access as `test` judges it for the probing user, then one `stat`.
    /// The times are read twice: whole seconds (`%X`), and the human form
    /// (`%x`) for the fraction, which old coreutils cannot print otherwise.
    fn script(path: &str) -> String {
        format!(
            r#"p={}
if [ ! -e "$p" ] && [ ! -L "$p" ]; then echo absent; exit 0; fi
r=0 w=0 x=0; [ -r "$p" ] && r=1; [ -w "$p" ] && w=1; [ -x "$p" ] && x=1
echo "$r $w $x"
stat -c '%u %g %i %d %h %b %B %t %T %X %Y %Z|%x|%y|%z|%F' -- "$p""#,
            quote(path)
        )
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<Option<FileMeta>, ModuleError> {
        let bad = || fact::bad(Self::key(path), format!("unexpected answer: {}", r.stdout));
        if r.rc != 0 {
            return Err(fact::bad(Self::key(path), r.stderr.trim().to_string()));
        }
        let mut lines = r.stdout.lines();
        let access = lines.next().ok_or_else(bad)?;
        if access == "absent" {
            return Ok(None);
        }
        let flag = |i: usize| access.split(' ').nth(i) == Some("1");
        let line = lines.next().ok_or_else(bad)?;
        let parts: Vec<&str> = line.split('|').collect();
        let [numbers, at, mt, ct, file_type] = parts[..] else {
            return Err(bad());
        };
        let n: Vec<&str> = numbers.split(' ').collect();
        let [uid, gid, inode, dev, nlink, blocks, block_size, major, minor, a, m, c] = n[..] else {
            return Err(bad());
        };
        let int = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let hex = |s: &str| u64::from_str_radix(s, 16).map_err(|_| bad());
        let time = |whole: &str, human: &str| -> Result<f64, ModuleError> {
            let whole = whole.parse::<i64>().map_err(|_| bad())?;
            Ok(whole as f64 + fraction(human))
        };
        Ok(Some(FileMeta {
            uid: int(uid)?,
            gid: int(gid)?,
            inode: int(inode)?,
            dev: int(dev)?,
            nlink: int(nlink)?,
            blocks: int(blocks)?,
            block_size: int(block_size)?,
            device_type: makedev(hex(major)?, hex(minor)?),
            atime: time(a, at)?,
            mtime: time(m, mt)?,
            ctime: time(c, ct)?,
            file_type: file_type.to_string(),
            readable: flag(0),
            writeable: flag(1),
            executable: flag(2),
        }))
    }

    fn render(v: &Option<FileMeta>) -> ProbeResult {
        let Some(m) = v else {
            return ProbeResult::ok("absent\n");
        };
        let bit = |b: bool| if b { "1" } else { "0" };
        // The human form only carries the fraction here.
        let human = |t: f64| format!("1970-01-01 00:00:00.{:09} +0000", nanos(t));
        ProbeResult::ok(format!(
            "{} {} {}\n{} {} {} {} {} {} {} {:x} {:x} {} {} {}|{}|{}|{}|{}\n",
            bit(m.readable),
            bit(m.writeable),
            bit(m.executable),
            m.uid,
            m.gid,
            m.inode,
            m.dev,
            m.nlink,
            m.blocks,
            m.block_size,
            major(m.device_type),
            minor(m.device_type),
            m.atime.floor(),
            m.mtime.floor(),
            m.ctime.floor(),
            human(m.atime),
            human(m.mtime),
            human(m.ctime),
            m.file_type,
        ))
    }
}

/// The fraction of a second in `stat`'s human time
/// ("2026-12-07 04:30:00.602412981 +0000"); 0 when it has none.
fn fraction(human: &str) -> f64 {
    let digits = human
        .split(' ')
        .nth(1)
        .and_then(|clock| clock.split_once('.'))
        .map_or("", |(_, f)| f);
    format!("0.{digits}").parse().unwrap_or(0.0)
}

fn nanos(t: f64) -> u64 {
    ((t - t.floor()) * 1e9).round().min(999_999_999.0) as u64
}

/// glibc's `makedev`, from the major and minor numbers `stat` prints.
fn makedev(major: u64, minor: u64) -> u64 {
    (minor & 0xff) | ((major & 0xfff) << 8) | ((minor & !0xff) << 12) | ((major & !0xfff) << 32)
}

fn major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

fn minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}

/// Values of this fact, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut super::fact::RoundTrip) {
    rt.check::<FileMetaFact>("/d", None);
    rt.check::<FileMetaFact>(
        "/d",
        Some(FileMeta {
            uid: 1000,
            gid: 1000,
            inode: 7,
            dev: 66306,
            nlink: 2,
            blocks: 0,
            block_size: 4096,
            device_type: makedev(259, 65537),
            atime: 1.25,
            mtime: 2.5,
            ctime: 3.0,
            file_type: "block special file".into(),
            readable: true,
            writeable: false,
            executable: true,
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::assert_sh_parses;

    #[test]
    fn reads_what_stat_prints() {
        let answer = "1 1 0\n0 0 1234 2049 1 8 4096 0 0 1796599582 1796599583 1796599584|2026-12-07 04:30:00.602412981 +0000|2026-12-07 04:30:01.5 +0000|2026-12-07 04:30:02 +0000|regular file\n";
        let m = FileMetaFact::parse("/p", &ProbeResult::ok(answer))
            .unwrap()
            .unwrap();
        assert_eq!((m.uid, m.inode, m.dev, m.blocks), (0, 1234, 2049, 8));
        assert!((m.atime - 1_796_599_582.602_413).abs() < 1e-6);
        assert_eq!((m.mtime, m.ctime), (1796599583.5, 1796599584.0));
        assert_eq!(m.file_type, "regular file");
        assert!(m.readable && m.writeable && !m.executable);
        assert_eq!(
            FileMetaFact::parse("/p", &ProbeResult::ok("absent\n")).unwrap(),
            None
        );
        assert_sh_parses(&FileMetaFact::script("/a b'c"));
    }

    #[test]
    fn only_a_file_fact_prediction_makes_it_stale() {
        assert_eq!(
            stale_after("file:/etc/x").as_deref(),
            Some("file-meta:/etc/x")
        );
        assert_eq!(stale_after("pkg:curl"), None);
    }

    #[test]
    fn a_device_number_round_trips() {
        let dev = makedev(259, 65537);
        assert_eq!((major(dev), minor(dev)), (259, 65537));
    }
}
