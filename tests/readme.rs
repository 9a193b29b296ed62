//! The README and docs/ say what the code does: every relative link
//! leads to a file (and a heading) that exists, every parameter has its one
//! doc line for the generated module pages, the compatibility table is
//! what the keyword declarations render, and the loader takes and refuses
//! each keyword where they say.

use std::path::{Path, PathBuf};

use nodeprov::load::keywords::{At, Level, KEYWORDS};
use nodeprov::modules::registry;
use nodeprov::report::keyword_doc;

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

const BEGIN: &str = "<!-- generated by nodeprov doc --keywords -->\n\n";
const END: &str = "\n<!-- end of generated -->";

#[test]
fn the_keyword_table_is_what_the_code_renders() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ansible-projects.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = text.split_once(BEGIN).expect("the generated table's start");
    let (table, after) = rest.split_once(END).expect("the generated table's end");
    let rendered = keyword_doc::table(KEYWORDS);
    if std::env::var_os("NODEPROV_BLESS").is_some() {
        std::fs::write(&path, format!("{before}{BEGIN}{rendered}{END}{after}")).unwrap();
        return;
    }
    assert!(
        table == rendered,
        "the keyword table of docs/ansible-projects.md is stale \
         (NODEPROV_BLESS=1 cargo test --test readme rewrites it)"
    );
}

/// A playbook using `keyword` at `level`, with a value of no particular
/// type: a refused keyword is refused by name whatever its value, and a
/// taken one may be judged wrong for its value but never unknown.
fn playbook_with(level: Level, keyword: &str) -> Vec<(&'static str, String)> {
    let site = match level {
        Level::Play => format!("- hosts: all\n  {keyword}: x\n  tasks: []\n"),
        Level::Block => format!(
            "- hosts: all\n  tasks:\n    - block: [{{debug: {{msg: a}}}}]\n      {keyword}: x\n"
        ),
        Level::Task => {
            format!("- hosts: all\n  tasks:\n    - debug: {{msg: a}}\n      {keyword}: x\n")
        }
        Level::Include => {
            format!("- hosts: all\n  tasks:\n    - include_tasks: t.yml\n      {keyword}: x\n")
        }
        Level::RoleEntry => format!("- hosts: all\n  roles:\n    - role: r\n      {keyword}: x\n"),
    };
    vec![
        ("site.yml", site),
        ("t.yml", "- debug: {msg: a}\n".into()),
        ("roles/r/tasks/main.yml", "- debug: {msg: a}\n".into()),
    ]
}

fn load_errors(files: &[(&str, String)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    match nodeprov::load::playbook::load(&dir.path().join("site.yml")) {
        Ok(_) => Vec::new(),
        Err(errs) => errs.into_iter().map(|d| d.message).collect(),
    }
}

fn task_with(key: &str) -> Vec<(&'static str, String)> {
    vec![(
        "site.yml",
        format!("- hosts: all\n  tasks:\n    - debug: {{msg: a}}\n      {key}\n"),
    )]
}

/// Each keyword at each level does what the table says: taken (maybe
/// judged wrong for its value, never unknown), or refused by name as not
/// supported; where Ansible has no such keyword, an error too (on a role
/// entry, a role parameter).
#[test]
fn the_loader_takes_and_refuses_what_the_table_says() {
    assert!(KEYWORDS.len() > 60, "{} keywords", KEYWORDS.len());
    let mut wrong = Vec::new();
    for k in KEYWORDS.iter().filter(|k| !k.name.contains('<')) {
        for level in Level::ALL {
            let errors = load_errors(&playbook_with(level, k.name));
            let quoted = format!("'{}'", k.name);
            let refusal = format!("{quoted} is not supported by nodeprov");
            let refused = errors.contains(&refusal);
            let unknown = errors.iter().any(|e| {
                e.contains(&quoted) && (e.contains("unknown") || e.contains("not a module"))
            });
            let ok = match k.at(level) {
                At::Yes => !refused && !unknown,
                At::Refused => refused,
                At::No => level == Level::RoleEntry || !errors.is_empty(),
            };
            if !ok {
                wrong.push(format!(
                    "{} `{}` ({:?}): {errors:?}",
                    level.name(),
                    k.name,
                    k.at(level)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The lookups the table names load natively; any other loads too, and
/// `validate` asks ansible-core for it (tests/ansible_versions.rs).
#[test]
fn with_lookups_the_table_names_and_any_other_are_taken() {
    let row = KEYWORDS
        .iter()
        .find(|k| k.name == "with_<lookup>")
        .expect("a with_<lookup> keyword");
    assert_eq!(row.at, [At::No, At::No, At::Yes, At::Yes, At::No]);
    for lookup in quoted_words(row.notes) {
        let lookup = lookup.split('/').next().unwrap();
        let errors = load_errors(&task_with(&format!("with_{lookup}: [[1], [2]]")));
        assert_eq!(errors, Vec::<String>::new(), "with_{lookup}");
    }
    let errors = load_errors(&task_with("with_sequence: start=1 end=3"));
    assert_eq!(errors, Vec::<String>::new());
    let include = "- hosts: all\n  tasks:\n    - include_tasks: one.yml\n      with_sequence: start=1 end=3\n";
    let files = [
        ("site.yml", include.to_string()),
        ("one.yml", "- debug: {msg: a}\n".to_string()),
    ];
    assert_eq!(load_errors(&files), Vec::<String>::new());
}
