//! What the loaders' property tests share: inputs made by mutating
//! realistic seeds, and a case count small enough for CI.
//!
//! Random text alone almost never gets past a parser's first line; edits of
//! real playbooks, inventories and templates reach the deep paths (aliases,
//! ranges, sections, quoting) where crashes hide.

use proptest::prelude::*;
use proptest::test_runner::Config;

/// Cases per property when `PROPTEST_CASES` does not say: a few seconds
/// per loader in a debug build.
const DEFAULT_CASES: u32 = 200;

/// Fragments that mean something to one loader or another.
const TOKENS: [&str; 32] = [
    ":",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\n",
    "\t",
    " ",
    "#",
    "=",
    "&a ",
    "*a",
    "<<: ",
    "- ",
    "|",
    ">",
    "\\",
    "\u{feff}",
    "\0",
    "é",
    "{{",
    "}}",
    "{%",
    "%}",
    "[1:9]",
    "[a:",
    ":vars]",
    "ansible_port=",
    "---\n",
    "? ",
];

pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    // Failures are kept as named regression tests, not in files beside
    // the sources.
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

#[derive(Clone, Debug)]
enum Edit {
    Insert(usize, usize),
    Delete(usize, usize),
    /// Copies a stretch to another place: repeats, nesting, long lines.
    Copy(usize, usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, t)| Edit::Insert(at, t)),
        (any::<usize>(), 1..16usize).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), 1..64usize, any::<usize>()).prop_map(|(a, n, b)| Edit::Copy(a, n, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// One of `seeds` with up to 8 edits applied.
pub fn mutated(seeds: &'static [&'static str]) -> impl Strategy<Value = String> {
    (0..seeds.len(), prop::collection::vec(edit(), 0..8)).prop_map(move |(seed, edits)| {
        let mut text = seeds[seed].to_string();
        for e in edits {
            apply(&mut text, e);
        }
        text
    })
}

fn apply(text: &mut String, edit: Edit) {
    let at = |pos: usize, text: &str| floor_char(text, pos % (text.len() + 1));
    match edit {
        Edit::Insert(pos, t) => {
            let i = at(pos, text);
            text.insert_str(i, TOKENS[t]);
        }
        Edit::Delete(pos, n) => {
            let i = at(pos, text);
            let j = floor_char(text, (i + n).min(text.len()));
            text.replace_range(i..j, "");
        }
        Edit::Copy(from, n, to) => {
            let i = at(from, text);
            let j = floor_char(text, (i + n).min(text.len()));
            let piece = text[i..j].to_string();
            let k = at(to, text);
            text.insert_str(k, &piece);
        }
        Edit::Truncate(pos) => {
            let i = at(pos, text);
            text.truncate(i);
        }
    }
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_keep_text_valid_at_any_position() {
        let mut text = "aé[b]".to_string();
        apply(&mut text, Edit::Insert(2, 1));
        assert_eq!(text, "a[é[b]");
        apply(&mut text, Edit::Delete(3, 1));
        assert_eq!(text, "a[é[b]", "deleting inside é rounds down to its start");
        apply(&mut text, Edit::Copy(0, 2, 99));
        assert_eq!(text, "a[a[é[b]");
        apply(&mut text, Edit::Truncate(3));
        assert_eq!(text, "a[a");
    }
}
