//! The README and docs/ say what the code does: every relative link
//! leads to a file (and a heading) that exists, every parameter has its one
//! doc line for the generated module pages, and the compatibility table
//! lists exactly the keywords the loader takes and refuses.

use std::path::{Path, PathBuf};

use nodeprov::modules::registry;

const COMPATIBILITY: &str = include_str!("../docs/ansible-projects.md");

/// The words between backticks.
fn quoted_words(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// The README and every Markdown file under docs/.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, spaces to dashes, other
/// punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The targets of a text's Markdown links `[text](target)`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_leads_somewhere() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, heading) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if heading.is_empty() {
                continue;
            }
            let linked = std::fs::read_to_string(&path).unwrap_or_default();
            let headings: Vec<String> = linked
                .lines()
                .filter_map(|l| {
                    l.trim_start_matches('#')
                        .strip_prefix(' ')
                        .filter(|_| l.starts_with('#'))
                })
                .map(anchor)
                .collect();
            if !headings.iter().any(|h| h == heading) {
                broken.push(format!("{}: {target} (no such heading)", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_links_every_document() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let linked = links(&readme);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    for doc in std::fs::read_dir(&root).unwrap() {
        let path = doc.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let target = if path.is_dir() {
            format!("docs/{name}/README.md")
        } else {
            format!("docs/{name}")
        };
        if name.ends_with(".md") || path.is_dir() {
            assert!(
                linked
                    .iter()
                    .any(|l| l.split('#').next() == Some(target.as_str())),
                "README does not link {target}"
            );
        }
    }
}

#[test]
fn the_link_check_reads_links_and_anchors_as_github_does() {
    assert_eq!(anchor("Ansible's own modules"), "ansibles-own-modules");
    assert_eq!(
        anchor("Check mode, diffs and reports"),
        "check-mode-diffs-and-reports"
    );
    assert_eq!(
        links("see [a](docs/a.md#x) and [b](#y)\n```\n[c](z)\n```"),
        ["docs/a.md#x", "#y"]
    );
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
    COMPATIBILITY
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
    let row = COMPATIBILITY
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
