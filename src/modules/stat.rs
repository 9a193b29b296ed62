//! `stat`: a path's type, mode, owner, size and checksum, returned for
//! `register:`. Read from the same file fact the file modules write, so a
//! path an earlier task creates reads as created.
//!
//! **`stat`** registers Ansible's `stat` dictionary (`exists`, `isreg`, `isdir`,
//! `islnk`, `mode` and its bits, `pw_name`, `gr_name`, `size`, `lnk_source`,
//! `lnk_target`, `checksum`), read from the same probe the file modules
//! predict: a file an earlier task of the run writes reads as written. What
//! no prediction knows (`uid`, `gid`, `inode`, `dev`, `nlink`, `atime`,
//! `mtime`, `ctime`, `blocks`, `readable`, `writeable`, `executable`…) comes
//! from a `stat` of its own; in apply it is read again after an earlier task
//! of the run writes the path (one more round trip then), and in check mode
//! a path only an earlier task would create has none of it. The checksum
//! is of the file's bytes, text or not; a file over 1 MiB is not sent: its
//! digest is computed on the host in the same probe (with its SHA-256, which
//! must match the file probe's: when an earlier task of the run changes such a
//! file, the checksum is left out with a note). For a link, `lnk_target` is
//! its text as `readlink` prints it and `lnk_source` its path with every link
//! on the way resolved, as Ansible's `realpath` gives it (`readlink -m`, in the
//! same probe: a dangling link resolves as far as it can); a path `readlink -m`
//! cannot resolve keeps the link's text. Only a link costs the probe these two
//! processes. The probe carries a file that
//! is not UTF-8 text base64-encoded, so `slurp` returns it byte for byte; the
//! modules that edit text (`lineinfile`, `replace`, `blockinfile`, `ini_file`,
//! `sysctl`, `mount`…) refuse such a file rather than rewrite it. `debug`,
//! `assert`, `fail`, `set_fact` and `include_vars` are decided on the controller
//! from the task's variables; they add no step and no round trip.
//!
//! # Example
//!
//! ```yaml
//! - name: Look for the loaded NVIDIA driver
//!   stat:
//!     path: /proc/driver/nvidia/version
//!   register: nvidia_driver
//! - name: Checksum the CUDA installer before running it
//!   stat:
//!     path: /opt/installers/cuda_12.4.1_550.54.15_linux.run
//!     checksum_algorithm: sha256
//!   register: cuda_installer
//! ```

use serde_json::{json, Map, Value};

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::file_meta::{FileMeta, FileMetaFact};
use crate::modules::kit::files::{digest_hex, Digest, FileFact, FileState, Kind, MAX_CONTENT};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Choice, ParamError, Params};
use crate::remote::probe::{Probe, ProbeResult};

pub const STAT: ModuleSpec = ModuleSpec {
    name: "stat",
    source: file!(),
    aliases: &["ansible.builtin.stat"],
    params: &StatArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct StatArgs {
        /// the path on the host
        path: String,
        /// return `checksum` of a regular file
        get_checksum: bool = true,
        /// the checksum's algorithm (default sha1)
        checksum_algorithm: Digest = Digest::Sha1,
        /// accepted; the MIME type is not returned
        get_mime: Option<bool>,
        /// accepted; attributes are not returned
        get_attributes: Option<bool>,
        /// follow a symlink: not supported (true is refused), a link is described as a link
        follow: bool = false,
    }
}

struct Stat {
    path: String,
    checksum: Option<Digest>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = StatArgs::read(p)?;
    let _ = (a.get_mime, a.get_attributes);
    if a.follow {
        return Err(p.unsupported(
            "follow",
            "follow: true is not supported by nodeprov; stat the link's target path",
        ));
    }
    Ok(Box::new(Stat {
        path: a.path,
        checksum: a.get_checksum.then_some(a.checksum_algorithm),
    }))
}

impl Module for Stat {
    /// The file fact, and the checksum of a file too large for it to read
    /// unless that is its SHA-256, which it has.
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![FileFact::probe(&self.path), FileMetaFact::probe(&self.path)];
        if let Some(q) = self.large_sum() {
            probes.push(LargeSumFact::probe(&q));
        }
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let st = FileFact::read(facts, &self.path)?;
        let meta = FileMetaFact::read(facts, &self.path)?;
        let mut plan = Plan::noop();
        let mut stat = describe(&self.path, st.as_ref());
        if let (Some(st), Value::Object(d)) = (&st, &mut stat) {
            match meta.filter(|m| kind_of(&m.file_type) == st.kind) {
                Some(m) => d.extend(described_meta(&m)),
                // A path an earlier task creates in check mode, or turns
                // into another kind: nothing of it is on the host yet.
                None => plan.notes.push(format!(
                    "{}: its owner and group ids, inode and times are not returned: an earlier task of the run creates it",
                    self.path
                )),
            }
        }
        if let (Some(digest), Some(st)) = (self.checksum, &st) {
            match self.checksum(digest, st, facts)? {
                Some(Checksum::Known(sum)) => stat["checksum"] = json!(sum),
                Some(Checksum::Stale(why)) => plan.notes.push(why),
                None => {}
            }
        }
        plan.returns.insert("stat".into(), stat);
        Ok(plan)
    }
}

impl Stat {
    fn large_sum(&self) -> Option<LargeSum> {
        let digest = self.checksum.filter(|d| *d != Digest::Sha256)?;
        Some(LargeSum {
            path: self.path.clone(),
            digest,
        })
    }

    /// The checksum Ansible would return for a regular file: from the bytes
    /// the file fact read, or its SHA-256, or, for a larger file, computed
    /// on the host.
    fn checksum(
        &self,
        digest: Digest,
        st: &FileState,
        facts: &Facts,
    ) -> Result<Option<Checksum>, ModuleError> {
        if st.kind != Kind::File {
            return Ok(None);
        }
        if let Some(data) = st.data() {
            return Ok(Some(Checksum::Known(digest_hex(digest, data))));
        }
        let Some(sha256) = &st.sha256 else {
            return Ok(None);
        };
        let Some(q) = self.large_sum() else {
            return Ok(Some(Checksum::Known(sha256.clone())));
        };
        Ok(Some(match LargeSumFact::read(facts, &q)? {
            Some(sums) if sums.sha256 == *sha256 => Checksum::Known(sums.sum),
            _ => Checksum::Stale(format!(
                "the {} checksum of {} is not returned: the file changes before this task",
                digest.name(),
                self.path
            )),
        }))
    }
}

/// What `stat` can say of a regular file's checksum.
enum Checksum {
    Known(String),
    /// Why not: the file fact is an earlier task's prediction, and the
    /// host's sum is of the file as it was.
    Stale(String),
}

/// Ansible's `stat` dictionary, without the checksum, for what the file
/// fact knows.
fn describe(path: &str, st: Option<&FileState>) -> Value {
    let Some(st) = st else {
        return json!({"exists": false});
    };
    let bit = |b: u32| st.mode & b != 0;
    let mut d: Map<String, Value> = json!({
        "exists": true,
        "path": path,
        "mode": format!("{:04o}", st.mode & 0o7777),
        "isreg": st.kind == Kind::File,
        "isdir": st.kind == Kind::Dir,
        "islnk": st.kind == Kind::Link,
        "ischr": false,
        "isblk": false,
        "isfifo": false,
        "issock": false,
        "pw_name": st.owner,
        "gr_name": st.group,
        "size": st.size,
        "rusr": bit(0o400), "wusr": bit(0o200), "xusr": bit(0o100),
        "rgrp": bit(0o040), "wgrp": bit(0o020), "xgrp": bit(0o010),
        "roth": bit(0o004), "woth": bit(0o002), "xoth": bit(0o001),
        "isuid": bit(0o4000),
        "isgid": bit(0o2000),
        "readable": true,
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    if let Some(target) = &st.link_target {
        // A link whose path `readlink -m` could not resolve keeps its text.
        let source = st.link_resolved.as_ref().unwrap_or(target);
        d.insert("lnk_source".into(), json!(source));
        d.insert("lnk_target".into(), json!(target));
    }
    Value::Object(d)
}

/// What `stat` says of the path beyond the file fact, as Ansible's module
/// names it.
fn described_meta(m: &FileMeta) -> Map<String, Value> {
    let kind = |t: &str| json!(m.file_type == t);
    Map::from_iter([
        ("uid".into(), json!(m.uid)),
        ("gid".into(), json!(m.gid)),
        ("inode".into(), json!(m.inode)),
        ("dev".into(), json!(m.dev)),
        ("nlink".into(), json!(m.nlink)),
        ("atime".into(), json!(m.atime)),
        ("mtime".into(), json!(m.mtime)),
        ("ctime".into(), json!(m.ctime)),
        ("blocks".into(), json!(m.blocks)),
        ("block_size".into(), json!(m.block_size)),
        ("device_type".into(), json!(m.device_type)),
        ("disk_usage_bytes".into(), json!(m.blocks * 512)),
        ("ischr".into(), kind("character special file")),
        ("isblk".into(), kind("block special file")),
        ("isfifo".into(), kind("fifo")),
        ("issock".into(), kind("socket")),
        ("readable".into(), json!(m.readable)),
        ("writeable".into(), json!(m.writeable)),
        ("executable".into(), json!(m.executable)),
    ])
}

/// The file fact's kind of a path `stat` calls `file_type`.
fn kind_of(file_type: &str) -> Kind {
    match file_type {
        "regular file" | "regular empty file" => Kind::File,
        "directory" => Kind::Dir,
        "symbolic link" => Kind::Link,
        _ => Kind::Other,
    }
}

/// A file too large for the file fact to read, and the digest asked of it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LargeSum {
    path: String,
    digest: Digest,
}

/// A regular file's digests over the content limit, computed on the host:
/// its SHA-256, which ties them to the file fact's, and the one asked.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sums {
    sha256: String,
    sum: String,
}

/// `None` for anything but a regular file larger than the file fact reads,
/// whose bytes it has; the hashing is only paid for large files.
struct LargeSumFact;

impl Fact for LargeSumFact {
    type Query = LargeSum;
    type Value = Option<Sums>;

    fn key(q: &LargeSum) -> String {
        format!("checksum:{}:{}", q.digest.name(), q.path)
    }

    fn script(q: &LargeSum) -> String {
        format!(
            "p={}
if [ -L \"$p\" ] || [ ! -f \"$p\" ]; then exit 0; fi
             s=$(stat -c %s -- \"$p\") || exit 1
             if [ \"$s\" -le {MAX_CONTENT} ]; then exit 0; fi
             sha256sum -- \"$p\" && {}sum -- \"$p\"",
            quote(&q.path),
            q.digest.name()
        )
    }

    fn parse(q: &LargeSum, r: &ProbeResult) -> Result<Option<Sums>, ModuleError> {
        let bad = || fact::bad(Self::key(q), format!("cannot read: {}", r.stderr.trim()));
        if r.rc != 0 {
            return Err(bad());
        }
        let mut sums = r.stdout.lines().map(|l| l.split(' ').next().unwrap_or(""));
        match (sums.next(), sums.next()) {
            (None, _) => Ok(None),
            (Some(sha256), Some(sum)) => Ok(Some(Sums {
                sha256: sha256.to_string(),
                sum: sum.to_string(),
            })),
            _ => Err(bad()),
        }
    }

    fn render(v: &Option<Sums>) -> ProbeResult {
        ProbeResult::ok(match v {
            Some(s) => format!("{}  -\n{}  -\n", s.sha256, s.sum),
            None => String::new(),
        })
    }
}

/// Values of the large-file checksum fact, for the round trip.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = LargeSum {
        path: "/srv/big".into(),
        digest: Digest::Md5,
    };
    let sums = Sums {
        sha256: crate::modules::kit::files::sha256_hex(b"big"),
        sum: digest_hex(Digest::Md5, b"big"),
    };
    rt.check::<LargeSumFact>(&q, None);
    rt.check::<LargeSumFact>(&q, Some(sums));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::sha256_hex;
    use crate::modules::kit::testing::{build_error, build_test, facts_of};

    /// What `stat(1)` says of a path of the file fact's `answer`.
    fn meta_of(answer: &str) -> String {
        let file_type = match answer.split(' ').next() {
            Some("f") => "regular file",
            Some("d") => "directory",
            _ => return "absent\n".into(),
        };
        format!("1 1 0\n1000 27 812 2049 1 8 4096 0 0 100 200 300|x 1:1:1.5 +0000|x 1:1:1 +0000|x 1:1:1.25 +0000|{file_type}\n")
    }

    fn stat(params: Value, answer: &str) -> Value {
        let m = build_test(&STAT, params).unwrap();
        let meta = meta_of(answer);
        let facts = facts_of(&[("file:/etc/x", answer), ("file-meta:/etc/x", &meta)]);
        m.plan(&facts).unwrap().returns["stat"].clone()
    }

    #[test]
    fn ids_times_and_permission_bits_as_ansible_names_them() {
        let s = stat(
            json!({"path": "/etc/x"}),
            "f 4750 root wheel 6\n\n6\nhello\n",
        );
        assert_eq!(
            (&s["uid"], &s["gid"], &s["inode"]),
            (&json!(1000), &json!(27), &json!(812))
        );
        assert_eq!(
            (&s["atime"], &s["mtime"], &s["ctime"]),
            (&json!(100.5), &json!(200.0), &json!(300.25))
        );
        assert_eq!(
            (&s["mode"], &s["isuid"], &s["isgid"]),
            (&json!("4750"), &json!(true), &json!(false))
        );
        assert_eq!(
            (&s["xgrp"], &s["roth"], &s["isfifo"]),
            (&json!(true), &json!(false), &json!(false))
        );
        assert_eq!(
            (&s["disk_usage_bytes"], &s["executable"]),
            (&json!(4096), &json!(false))
        );
        // A file an earlier task creates in check mode: the host has none
        // yet, so nothing of it is made up.
        let m = build_test(&STAT, json!({"path": "/etc/x"})).unwrap();
        let facts = facts_of(&[
            ("file:/etc/x", "f 644 root root 2\n\n2\nhi"),
            ("file-meta:/etc/x", "absent\n"),
        ]);
        let plan = m.plan(&facts).unwrap();
        assert_eq!(
            (
                plan.returns["stat"].get("mtime"),
                plan.returns["stat"]["size"].clone()
            ),
            (None, json!(2))
        );
        assert!(
            plan.notes[0].contains("an earlier task of the run creates it"),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn describes_a_file_as_ansible_does() {
        let s = stat(json!({"path": "/etc/x"}), "f 644 root root 6\n\n6\nhello\n");
        assert_eq!(s["exists"], true);
        assert_eq!((&s["isreg"], &s["isdir"]), (&json!(true), &json!(false)));
        assert_eq!(s["mode"], "0644");
        assert_eq!(s["pw_name"], "root");
        // sha1("hello\n"), as sha1sum prints it.
        assert_eq!(s["checksum"], "f572d396fae9206628714fb2ce00f72e94f2258f");
        let s = stat(
            json!({"path": "/etc/x", "checksum_algorithm": "sha256"}),
            "f 644 root root 6\n\n6\nhello\n",
        );
        assert_eq!(
            s["checksum"],
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(
            stat(json!({"path": "/etc/x"}), "absent\n"),
            json!({"exists": false})
        );
        let d = stat(
            json!({"path": "/etc/x", "get_checksum": false}),
            "d 755 root root 4096\n\n",
        );
        assert_eq!((&d["isdir"], d.get("checksum")), (&json!(true), None));
        assert!(build_error(&STAT, json!({"path": "/x", "follow": true})).contains("not supported"));
    }

    #[test]
    fn every_ansible_algorithm_is_offered() {
        let answer = "f 644 root root 6\n\n6\nhello\n";
        for (alg, len) in [("sha224", 56), ("sha384", 96), ("sha512", 128), ("md5", 32)] {
            let s = stat(json!({"path": "/etc/x", "checksum_algorithm": alg}), answer);
            assert_eq!(s["checksum"].as_str().map(str::len), Some(len), "{alg}");
        }
    }

    /// A large file's checksum is the host's, as long as the host's SHA-256
    /// is the file fact's; otherwise it is left out with a note.
    #[test]
    fn a_large_file_is_checksummed_on_the_host() {
        let m = build_test(&STAT, json!({"path": "/srv/big"})).unwrap();
        let q = LargeSum {
            path: "/srv/big".into(),
            digest: Digest::Sha1,
        };
        assert_eq!(m.probes()[2], LargeSumFact::probe(&q));
        let sha = sha256_hex(b"big");
        let large = FileState {
            content: None,
            sha256: Some(sha.clone()),
            size: MAX_CONTENT + 1,
            ..FileState::written("", 0o644, "root", "root")
        };
        let plan_with = |host_sha: &str| {
            let sums = LargeSumFact::render(&Some(Sums {
                sha256: host_sha.into(),
                sum: "abc1".into(),
            }));
            let mut facts = Facts::default();
            facts.insert(
                FileFact::key("/srv/big"),
                FileFact::render(&Some(large.clone())),
            );
            facts.insert(LargeSumFact::key(&q), sums);
            facts.insert(FileMetaFact::key("/srv/big"), ProbeResult::ok(meta_of("f")));
            m.plan(&facts).unwrap()
        };
        let plan = plan_with(&sha);
        assert_eq!(plan.returns["stat"]["checksum"], "abc1");
        let stale = plan_with("0000");
        assert_eq!(stale.returns["stat"].get("checksum"), None);
        assert!(
            stale.notes[0].contains("changes before this task"),
            "{stale:?}"
        );
        let sha256 = build_test(&STAT, json!({"path": "/p", "checksum_algorithm": "sha256"}));
        // The file fact and the meta fact: no checksum probe of its own.
        assert_eq!(sha256.unwrap().probes().len(), 2);
    }
}
