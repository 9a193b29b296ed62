//! The README documents exactly what the code accepts: every module, each of
//! its keys, each of its parameters and each word of its choices, all read
//! from the modules' own declarations; and its module table names nothing
//! the code does not take.

use nodeprov::modules::{registry, ModuleSpec};

const README: &str = include_str!("../README.md");

/// The module table's row for `name`.
fn row_of(name: &str) -> Option<&'static str> {
    let quoted = format!("`{name}`");
    README
        .lines()
        .find(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.contains(&quoted)))
}

/// The module table's row for `name`, plus the module's own paragraphs
/// (those under a heading or bold lead naming it), where parameters are
/// explained at length.
fn documentation_of(name: &str) -> String {
    let quoted = format!("`{name}`");
    let lead = format!("**{quoted}**");
    let section = README
        .split("\n\n")
        .skip_while(|p| !p.starts_with(&lead))
        .take_while(|p| p.starts_with(&lead) || !p.starts_with("**`"))
        .collect::<Vec<_>>()
        .join("\n\n");
    format!("{}\n{section}", row_of(name).unwrap_or_default())
}

/// The words between backticks.
fn quoted_words(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn readme_lists_every_module_key_parameter_and_choice() {
    let mut missing = Vec::new();
    for spec in registry() {
        let doc = documentation_of(spec.name);
        if !doc.contains('|') {
            missing.push(format!("{}: no row in the module table", spec.name));
            continue;
        }
        for key in spec.names().filter(|k| !k.starts_with("ansible.")) {
            if !doc.contains(&format!("`{key}`")) {
                missing.push(format!("{}: key `{key}`", spec.name));
            }
        }
        for param in spec.params.docs {
            let name = param.name;
            if param.choices.is_empty() {
                if !doc.contains(&format!("`{name}`")) && !doc.contains(&format!("`{name}: ")) {
                    missing.push(format!("{}: parameter `{name}`", spec.name));
                }
                continue;
            }
            // A choice is listed with all its words, as the code spells them.
            let listed = format!("`{name}: {}`", param.choices.join("\\|"));
            if !doc.contains(&listed) {
                missing.push(format!("{}: choice {listed}", spec.name));
            }
        }
    }
    assert!(missing.is_empty(), "README lacks:\n{}", missing.join("\n"));
}

/// Every word the row of `names` quotes that looks like a parameter, a
/// key or a choice, and is none of those of the modules in the row.
fn unknown_in_row(row: &str, specs: &[&ModuleSpec]) -> Vec<String> {
    let known = |word: &str| {
        specs.iter().any(|s| {
            s.names().any(|n| n == word)
                || s.params.canonical(word).is_some()
                || s.params
                    .docs
                    .iter()
                    .any(|d| d.name == word || d.choices.contains(&word))
        })
    };
    let mut unknown = Vec::new();
    for quoted in quoted_words(row) {
        let (name, choices) = quoted.split_once(": ").unwrap_or((quoted, ""));
        let words = std::iter::once(name).chain(choices.split("\\|").filter(|c| !c.is_empty()));
        for word in words {
            // Paths and prefixes (`templates/`, `ansible.builtin.`) are prose.
            let looks_like_a_name = word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if looks_like_a_name && !known(word) {
                unknown.push(word.to_string());
            }
        }
    }
    unknown
}

#[test]
fn readme_module_table_names_only_what_the_code_takes() {
    let mut extra = Vec::new();
    for spec in registry() {
        let Some(row) = row_of(spec.name) else {
            continue;
        };
        let in_row: Vec<&ModuleSpec> = registry()
            .iter()
            .filter(|s| row_of(s.name) == Some(row))
            .collect();
        for word in unknown_in_row(row, &in_row) {
            extra.push(format!(
                "{}: `{word}` is no parameter, key or choice",
                spec.name
            ));
        }
    }
    extra.dedup();
    assert!(extra.is_empty(), "README lists:\n{}", extra.join("\n"));
}

#[test]
fn the_table_check_catches_a_word_the_code_does_not_take() {
    let file = registry().iter().find(|s| s.name == "file").unwrap();
    let row = "| `file` | `file` | `path`, `state: file\\|folder`, `colour` |";
    assert_eq!(unknown_in_row(row, &[file]), ["folder", "colour"]);
}

#[test]
fn every_parameter_has_one_line_of_doc() {
    for spec in registry() {
        for p in spec.params.docs {
            let doc = p.doc.trim();
            assert!(
                !doc.is_empty() && !doc.contains('\n'),
                "{} {}: {doc:?}",
                spec.name,
                p.name
            );
        }
    }
}

/// The compatibility table: each keyword with its cells for play, block
/// and task (`yes`, `refused` or `—`).
fn keyword_table() -> Vec<(&'static str, [&'static str; 3])> {
    README
        .split("## Ansible compatibility")
        .nth(1)
        .expect("an 'Ansible compatibility' section")
        .lines()
        .skip_while(|l| !l.starts_with("| keyword |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`');
            (name, [cells[2], cells[3], cells[4]])
        })
        .collect()
}

/// A play using `keyword` at `level`, each with a value of its own type
/// where it has one; a refused keyword is refused by name whatever its value.
fn play_with(level: &str, keyword: &str) -> String {
    match level {
        "play" => format!("- hosts: all\n  {keyword}: x\n  tasks: []\n"),
        "block" => format!(
            "- hosts: all\n  tasks:\n    - block: [{{debug: {{msg: a}}}}]\n      {keyword}: x\n"
        ),
        _ => format!("- hosts: all\n  tasks:\n    - debug: {{msg: a}}\n      {keyword}: x\n"),
    }
}

fn load_errors(text: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("site.yml");
    std::fs::write(&path, text).unwrap();
    match nodeprov::load::playbook::load(&path) {
        Ok(_) => Vec::new(),
        Err(errs) => errs.into_iter().map(|d| d.message).collect(),
    }
}

#[test]
fn the_keyword_table_says_what_the_loader_takes_and_refuses() {
    let table = keyword_table();
    assert!(table.len() > 60, "{} rows", table.len());
    let mut wrong = Vec::new();
    for (i, (level, taken)) in nodeprov::load::playbook::keywords().into_iter().enumerate() {
        for keyword in taken {
            match table.iter().find(|(k, _)| k == keyword) {
                Some((_, cells)) if cells[i] == "yes" => {}
                Some((_, cells)) => wrong.push(format!(
                    "{level} `{keyword}` is taken, the table says {}",
                    cells[i]
                )),
                None => wrong.push(format!("{level} `{keyword}` has no row")),
            }
        }
        for (keyword, cells) in &table {
            let cell = cells[i];
            assert!(
                ["yes", "refused", "—"].contains(&cell),
                "`{keyword}`: '{cell}'"
            );
            if keyword.starts_with("with_") {
                continue;
            }
            if cell == "yes" && !taken.contains(keyword) {
                wrong.push(format!("{level} `{keyword}` is marked yes but not taken"));
            }
            if cell == "refused" {
                let quoted = format!("'{keyword}'");
                let errors = load_errors(&play_with(level, keyword));
                if !errors.iter().any(|e| e.contains(&quoted)) {
                    wrong.push(format!("{level} `{keyword}` is not refused: {errors:?}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn with_lookups_the_table_names_are_taken_and_others_refused() {
    let (_, cells) = keyword_table()
        .into_iter()
        .find(|(k, _)| *k == "with_<lookup>")
        .expect("a with_<lookup> row");
    assert_eq!(cells, ["—", "—", "yes"]);
    let row = README
        .lines()
        .find(|l| l.starts_with("| `with_<lookup>`"))
        .unwrap();
    for lookup in quoted_words(row.rsplit('|').nth(1).unwrap()) {
        let lookup = lookup.split('/').next().unwrap();
        let text = format!(
            "- hosts: all\n  tasks:\n    - debug: {{msg: a}}\n      with_{lookup}: [[1], [2]]\n"
        );
        assert_eq!(load_errors(&text), Vec::<String>::new(), "with_{lookup}");
    }
    let errors = load_errors(&play_with("task", "with_sequence"));
    assert_eq!(errors, ["'with_sequence' is not supported by nodeprov"]);
}
