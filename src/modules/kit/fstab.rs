//! `/etc/fstab` as text: entries parsed with fstab(5)'s octal escapes, and
//! edits that touch only the lines of one entry so that comments, order and
//! other entries stay byte-for-byte as they were.

use super::fact::Fact;
use super::files::{self, FileFact, WriteOpts};
use super::plan::{Facts, ModuleError, Plan};
use crate::base::shell::unescape_octal;
use crate::remote::probe::Probe;

pub(crate) const PATH: &str = "/etc/fstab";

/// The probe [`plan_entry`] reads.
pub(crate) fn probe() -> Probe {
    FileFact::probe(PATH)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub src: String,
    pub target: String,
    pub fstype: String,
    pub opts: String,
    pub dump: String,
    pub pass: String,
}

impl Entry {
    /// `None` for blank lines, comments and lines with fewer than 3 fields.
    pub(crate) fn parse(line: &str) -> Option<Entry> {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            return None;
        }
        let f: Vec<String> = t.split_whitespace().map(unescape_octal).collect();
        let field = |i: usize, default: &str| f.get(i).cloned().unwrap_or_else(|| default.into());
        (f.len() >= 3).then(|| Entry {
            src: f[0].clone(),
            target: f[1].clone(),
            fstype: f[2].clone(),
            opts: field(3, "defaults"),
            dump: field(4, "0"),
            pass: field(5, "0"),
        })
    }

    pub(crate) fn render(&self) -> String {
        [
            &self.src,
            &self.target,
            &self.fstype,
            &self.opts,
            &self.dump,
            &self.pass,
        ]
        .map(|f| escape(f))
        .join(" ")
    }

    pub(crate) fn is_swap(&self) -> bool {
        self.fstype == "swap"
    }

    /// The value of `key=value` in the options, if set.
    pub(crate) fn opt(&self, key: &str) -> Option<&str> {
        self.opts
            .split(',')
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
    }
}

/// fstab(5) fields cannot hold blanks: they are written as octal escapes.
pub(crate) fn escape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    for c in field.chars() {
        match c {
            ' ' => out.push_str("\\040"),
            '\t' => out.push_str("\\011"),
            '\n' => out.push_str("\\012"),
            '\\' => out.push_str("\\134"),
            c => out.push(c),
        }
    }
    out
}

/// The first line holding an entry selected by `is_target`.
pub(crate) fn find(text: &str, is_target: impl Fn(&Entry) -> bool) -> Option<&str> {
    text.lines()
        .find(|l| Entry::parse(l).is_some_and(|e| is_target(&e)))
}

/// `text` with exactly one line for the selected entry (or none when `want`
/// is `None`). The first selected line stays as written when `complies`
/// accepts it, so an equivalent spelling is not drift; later duplicates go.
/// Returns `text` itself when nothing changes.
pub(crate) fn edit(
    text: &str,
    is_target: impl Fn(&Entry) -> bool,
    want: Option<&Entry>,
    complies: impl Fn(&Entry) -> bool,
) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut placed = false;
    for line in text.lines() {
        match Entry::parse(line).filter(|e| is_target(e)) {
            None => out.push(line.to_string()),
            Some(e) => {
                if let (Some(w), false) = (want, placed) {
                    out.push(if complies(&e) {
                        line.to_string()
                    } else {
                        w.render()
                    });
                    placed = true;
                }
            }
        }
    }
    if let (Some(w), false) = (want, placed) {
        out.push(w.render());
    }
    if out.iter().map(String::as_str).eq(text.lines()) {
        return text.to_string();
    }
    out.iter().map(|l| format!("{l}\n")).collect()
}

/// The plan that leaves fstab with exactly one line for the selected entry
/// (none when `want` is `None`), written atomically; its change shows the
/// line before and after rather than the whole file.
pub(crate) fn plan_entry(
    facts: &Facts,
    is_target: impl Fn(&Entry) -> bool,
    want: Option<&Entry>,
    complies: impl Fn(&Entry) -> bool,
) -> Result<Plan, ModuleError> {
    let current = FileFact::read(facts, PATH)?;
    // A file it cannot read as text is refused, never taken for empty.
    let text = files::text_to_edit(PATH, current.as_ref(), files::WhenMissing::Create)?
        .unwrap_or_default();
    let new = edit(&text, &is_target, want, complies);
    if new == text {
        return Ok(Plan::noop());
    }
    let mut plan = files::plan_content(PATH, current.as_ref(), &new, &WriteOpts::default(), true)?;
    let before = find(&text, &is_target).unwrap_or("no line");
    let after = want.map_or("no line".into(), Entry::render);
    for c in &mut plan.changes {
        c.before = Some(before.to_string());
        c.after = Some(after.clone());
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn swap(path: &str) -> Entry {
        Entry {
            src: path.into(),
            target: "none".into(),
            fstype: "swap".into(),
            opts: "sw".into(),
            dump: "0".into(),
            pass: "0".into(),
        }
    }

    #[test]
    fn escapes_round_trip_and_parse() {
        let e = swap("/data/swap file");
        assert_eq!(e.render(), "/data/swap\\040file none swap sw 0 0");
        assert_eq!(Entry::parse(&e.render()), Some(e));
        assert_eq!(Entry::parse("# c"), None);
        let short = Entry::parse("/dev/sda1 / xfs").unwrap();
        assert_eq!(
            (short.opts.as_str(), short.pass.as_str()),
            ("defaults", "0")
        );
        assert_eq!(
            Entry::parse("/s none swap sw,pri=5 0 0")
                .unwrap()
                .opt("pri"),
            Some("5")
        );
    }

    #[test]
    fn edit_keeps_other_lines_and_drops_duplicates() {
        let text = "# keep\n/a none swap sw 0 0\nUUID=x / xfs defaults 0 0\n/a none swap sw 0 0\n";
        let is_a = |e: &Entry| e.is_swap() && e.src == "/a";
        let want = swap("/a");
        assert_eq!(
            edit(text, is_a, Some(&want), |_| true),
            "# keep\n/a none swap sw 0 0\nUUID=x / xfs defaults 0 0\n"
        );
        assert_eq!(
            edit(text, is_a, None, |_| true),
            "# keep\nUUID=x / xfs defaults 0 0\n"
        );
        let text = "/b none swap sw 0 0";
        assert_eq!(
            edit(text, is_a, Some(&want), |_| true),
            "/b none swap sw 0 0\n/a none swap sw 0 0\n"
        );
        assert_eq!(edit(text, is_a, None, |_| true), text, "untouched");
    }
}
