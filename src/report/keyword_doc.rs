//! The playbook keyword table, rendered from `load::keywords` alone:
//! docs/ansible-projects.md holds it and `nodeprov doc --keywords` prints
//! it, so what the docs say is taken or refused is what the loader does.

use std::fmt::Write;

use crate::load::keywords::{At, Keyword, Level};

/// One Markdown table: a row per keyword, a column per level.
pub fn table(keywords: &[Keyword]) -> String {
    let levels: Vec<&str> = Level::ALL.iter().map(|l| l.name()).collect();
    let mut out = format!(
        "| keyword | {} | notes |\n|---|{}---|\n",
        levels.join(" | "),
        "---|".repeat(levels.len())
    );
    for k in keywords {
        let cells: Vec<&str> = Level::ALL
            .iter()
            .map(|&l| match k.at(l) {
                At::Yes => "yes",
                At::Refused => "refused",
                At::No => "—",
            })
            .collect();
        // A `|` in a cell, in code or not, would end it.
        let notes = k.notes.replace('|', "\\|");
        let _ = writeln!(out, "| `{}` | {} | {notes} |", k.name, cells.join(" | "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::keywords::KEYWORDS;

    #[test]
    fn every_keyword_is_a_row_with_a_cell_per_level() {
        let text = table(KEYWORDS);
        let rows: Vec<&str> = text.lines().skip(2).collect();
        assert_eq!(rows.len(), KEYWORDS.len());
        let become_ = rows.iter().find(|r| r.starts_with("| `become` |")).unwrap();
        assert!(become_.starts_with("| `become` | yes | yes | yes | yes | yes | through sudo"));
        let check = rows
            .iter()
            .find(|r| r.starts_with("| `check_mode` |"))
            .unwrap();
        assert!(check.contains(r"x \| d(ansible_check_mode)"), "{check}");
        assert!(rows
            .iter()
            .all(|r| r.matches(" | ").count() > Level::ALL.len()));
    }
}
