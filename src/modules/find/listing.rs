//! What one find(1) lists under a task's paths: every entry within the
//! depth, with its stat fields, as NUL-separated records (a name may hold
//! any byte but NUL), and the paths it could not walk. Choosing among them
//! as Ansible does is left to the plan (`select.rs`), where find(1)'s own
//! tests would not match Ansible's semantics exactly.

use serde_json::json;

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::ModuleError;
use crate::remote::probe::ProbeResult;

/// What find is asked to walk.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Walk {
    pub paths: Vec<String>,
    /// Levels below each path to list; `None` is unlimited.
    pub depth: Option<u32>,
    pub follow: bool,
    /// Names starting with a dot are never chosen: their content is not read.
    pub hidden: bool,
    pub contains: Option<Contains>,
}

/// A regular expression each regular file's content is searched for.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Contains {
    pub pattern: String,
    /// Anywhere in the file (Python's `re.search`), else at the start of a
    /// line (`re.match` on each line).
    pub whole_file: bool,
}

/// One entry as lstat sees it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Entry {
    /// The path it was found under, as the task wrote it.
    pub start: String,
    /// Its path below `start`.
    pub rel: String,
    /// find's `%y`: `f`, `d`, `l`, `p`, `s`, `c`, `b`; `l` for a link
    /// with `follow` too, whose other fields are then its target's.
    pub kind: char,
    /// Permission bits with setuid, setgid and sticky.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    /// Owner and group names, the number where the id has no name.
    pub user: String,
    pub group: String,
    pub size: u64,
    pub inode: u64,
    pub dev: u64,
    pub nlink: u64,
    pub atime: f64,
    pub mtime: f64,
    pub ctime: f64,
    /// Whether the content matched `contains`, when it was searched.
    pub content: Option<bool>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) struct Listing {
    /// The host's clock when it listed (for `age`).
    pub now: f64,
    /// Paths not walked, with why.
    pub skipped: Vec<(String, String)>,
    pub entries: Vec<Entry>,
}

/// The fields find prints after an entry's `e`, content mark and link mark.
const FIELDS: &str = r"%H\0%P\0%y\0%m\0%U\0%G\0%u\0%g\0%s\0%i\0%D\0%n\0%A@\0%T@\0%C@\0";
const FIELD_COUNT: usize = 17;

pub(super) struct Found;

impl Fact for Found {
    type Query = Walk;
    type Value = Listing;

    fn key(w: &Walk) -> String {
        let contains = w.contains.as_ref().map(|c| (&c.pattern, c.whole_file));
        format!(
            "find:{}",
            json!([w.paths, w.depth, w.follow, w.hidden, contains])
        )
    }

    fn script(w: &Walk) -> String {
        let paths: Vec<String> = w.paths.iter().map(|p| quote(p)).collect();
        let mut find = String::from("LC_ALL=C find");
        if w.follow {
            find.push_str(" -L");
        }
        find.push_str(" \"$@\" -mindepth 1");
        if let Some(d) = w.depth {
            find.push_str(&format!(" -maxdepth {d}"));
        }
        let (check, mark) = match &w.contains {
            Some(c) => content_search(c, w.hidden),
            None => (String::new(), r"-printf '-\0'".to_string()),
        };
        // Following links, find describes their targets; -xtype still
        // tells a link, which Ansible's lstat would see.
        let link = match w.follow {
            true => r"\( -xtype l -printf 'l\0' -o -printf '-\0' \)",
            false => r"-printf '-\0'",
        };
        format!(
            r#"now=$(date +%s.%N) || exit 1
printf 'now\0%s\0' "$now"
set --
for p in {paths}; do
  if [ -d "$p" ]; then set -- "$@" "$p"; else printf "skip\\0%s\\0'%s' is not a directory\\0" "$p" "$p"; fi
done
[ $# -eq 0 ] && exit 0
find / -maxdepth 0 -printf '' 2>/dev/null || {{ echo 'find needs GNU find (-printf) on the host' >&2; exit 1; }}
{check}exec 3>&1
err=$({find} -printf 'e\0' {mark} {link} -printf '{FIELDS}' 2>&1 >&3)
[ -z "$err" ] && exit 0
printf '%s\n' "$err" | sed -n -e "s/^find: '\(.*\)': \(.*\)$/skip\n\1\n\2/p" \
  -e "s/^find: \(File system loop detected\); '\(.*\)' is part of .*/skip\n\2\n\1/p" | tr '\n' '\000'
exit 0"#,
            paths = paths.join(" "),
        )
    }

    fn parse(w: &Walk, r: &ProbeResult) -> Result<Listing, ModuleError> {
        let bad = |d: String| fact::bad(Self::key(w), d);
        if r.rc != 0 {
            return Err(bad(format!("find failed: {}", r.stderr.trim())));
        }
        let mut fields = r.stdout.split('\0');
        let mut listing = Listing {
            now: 0.0,
            skipped: Vec::new(),
            entries: Vec::new(),
        };
        while let Some(tag) = fields.next() {
            match tag {
                "" => {}
                "now" => listing.now = number(fields.next()).map_err(bad)?,
                "skip" => {
                    let path = fields.next().unwrap_or_default().to_string();
                    let why = fields.next().unwrap_or_default().to_string();
                    listing.skipped.push((path, why));
                }
                "e" => {
                    let f: Vec<&str> = fields.by_ref().take(FIELD_COUNT).collect();
                    listing.entries.push(entry(&f).map_err(bad)?);
                }
                other => return Err(bad(format!("unexpected record: {other:?}"))),
            }
        }
        Ok(listing)
    }

    fn render(v: &Listing) -> ProbeResult {
        let mut out = format!("now\0{}\0", v.now);
        for (path, why) in &v.skipped {
            out.push_str(&format!("skip\0{path}\0{why}\0"));
        }
        for e in &v.entries {
            let mark = match e.content {
                Some(true) => "y",
                Some(false) => "n",
                None => "-",
            };
            let fields = [
                mark.to_string(),
                "-".to_string(),
                e.start.clone(),
                e.rel.clone(),
                e.kind.to_string(),
                format!("{:o}", e.mode),
                e.uid.to_string(),
                e.gid.to_string(),
                e.user.clone(),
                e.group.clone(),
                e.size.to_string(),
                e.inode.to_string(),
                e.dev.to_string(),
                e.nlink.to_string(),
                e.atime.to_string(),
                e.mtime.to_string(),
                e.ctime.to_string(),
            ];
            out.push_str("e\0");
            for f in fields {
                out.push_str(&f);
                out.push('\0');
            }
        }
        ProbeResult::ok(out)
    }
}

/// The check that grep can search with the pattern (`-P`, Python-like
/// syntax), and find's test that marks each regular file `y` or `n`.
fn content_search(c: &Contains, hidden: bool) -> (String, String) {
    let (flags, pattern) = match c.whole_file {
        true => ("-qszP", c.pattern.clone()),
        false => ("-qsP", format!("^(?:{})", c.pattern)),
    };
    let pattern = quote(&pattern);
    let check = format!(
        "grep -P -e {pattern} /dev/null; [ $? -le 1 ] || {{ echo 'contains: grep -P cannot search for this pattern' >&2; exit 3; }}\n"
    );
    let visible = if hidden { "" } else { r"! -name '.*' " };
    let mark = format!(
        r"\( -type f {visible}-exec grep {flags} -e {pattern} {{}} \; -printf 'y\0' -o -printf 'n\0' \)"
    );
    (check, mark)
}

fn number<T: std::str::FromStr>(s: Option<&str>) -> Result<T, String> {
    let s = s.unwrap_or_default();
    s.parse().map_err(|_| format!("not a number: {s:?}"))
}

fn entry(f: &[&str]) -> Result<Entry, String> {
    let [mark, link, start, rel, kind, mode, uid, gid, user, group, size, inode, dev, nlink, atime, mtime, ctime] =
        f
    else {
        return Err(format!("an entry cut short: {f:?}"));
    };
    Ok(Entry {
        start: start.to_string(),
        rel: rel.to_string(),
        kind: match *link {
            "l" => 'l',
            _ => kind.chars().next().unwrap_or('?'),
        },
        mode: u32::from_str_radix(mode, 8).map_err(|_| format!("bad mode: {mode:?}"))?,
        uid: number(Some(uid))?,
        gid: number(Some(gid))?,
        user: user.to_string(),
        group: group.to_string(),
        size: number(Some(size))?,
        inode: number(Some(inode))?,
        dev: number(Some(dev))?,
        nlink: number(Some(nlink))?,
        atime: number(Some(atime))?,
        mtime: number(Some(mtime))?,
        ctime: number(Some(ctime))?,
        content: match *mark {
            "y" => Some(true),
            "n" => Some(false),
            _ => None,
        },
    })
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let walk = Walk {
        paths: vec!["/var/log".into()],
        depth: Some(1),
        follow: false,
        hidden: false,
        contains: None,
    };
    rt.check::<Found>(
        &walk,
        Listing {
            now: 1_700_000_000.25,
            skipped: vec![("/var/log/private".into(), "Permission denied".into())],
            entries: vec![sample_entry("a file\nwith 'quotes'", Some(true))],
        },
    );
}

#[cfg(test)]
pub(super) fn sample_entry(rel: &str, content: Option<bool>) -> Entry {
    Entry {
        start: "/var/log".into(),
        rel: rel.into(),
        kind: 'f',
        mode: 0o644,
        uid: 0,
        gid: 4,
        user: "root".into(),
        group: "adm".into(),
        size: 2048,
        inode: 12,
        dev: 2049,
        nlink: 1,
        atime: 1_699_999_000.5,
        mtime: 1_699_990_000.123_456_7,
        ctime: 1_699_990_000.0,
        content,
    }
}
