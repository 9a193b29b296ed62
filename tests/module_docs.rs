//! docs/modules/ is the modules' reference, generated from their
//! declarations (`ModuleSpec`, each parameter's doc line, the module
//! file's `//!` text) by the same renderer as `nodeprov doc`. A page that
//! differs from what the code renders fails here; `NODEPROV_BLESS=1 cargo
//! test --test module_docs` writes them anew. Each module's example is a
//! playbook that `nodeprov validate` accepts.

use std::path::{Path, PathBuf};
use std::process::Command;

use nodeprov::modules::registry;
use nodeprov::report::module_doc;

fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/modules")
}

/// Every generated file with the text the code renders for it.
fn expected() -> Vec<(PathBuf, String)> {
    let dir = docs_dir();
    let mut files = vec![(dir.join("README.md"), module_doc::index(registry()))];
    files.extend(
        registry()
            .iter()
            .map(|s| (dir.join(format!("{}.md", s.name)), module_doc::page(s))),
    );
    files
}

#[test]
fn module_pages_are_what_the_code_renders() {
    let files = expected();
    if std::env::var_os("NODEPROV_BLESS").is_some() {
        std::fs::create_dir_all(docs_dir()).unwrap();
        for entry in std::fs::read_dir(docs_dir()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        for (path, text) in &files {
            std::fs::write(path, text).unwrap();
        }
    }
    let mut stale = Vec::new();
    for (path, text) in &files {
        if std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    let mut extra: Vec<String> = std::fs::read_dir(docs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !files.iter().any(|(f, _)| f == p))
        .map(|p| p.display().to_string())
        .collect();
    extra.sort();
    assert!(
        stale.is_empty() && extra.is_empty(),
        "docs/modules is stale (NODEPROV_BLESS=1 cargo test --test module_docs rewrites it)\n\
         differs: {stale:?}\nno module's: {extra:?}"
    );
}

#[test]
fn doc_prints_a_module_page_and_the_list() {
    let bin = env!("CARGO_BIN_EXE_nodeprov");
    let page = Command::new(bin).args(["doc", "sysctl"]).output().unwrap();
    assert!(page.status.success());
    let page = String::from_utf8(page.stdout).unwrap();
    let spec = registry().iter().find(|s| s.name == "sysctl").unwrap();
    for p in spec.params.docs {
        let row = format!("| `{}` ", p.name);
        let line = page.lines().find(|l| l.starts_with(&row));
        assert!(
            line.is_some_and(|l| l.contains(p.doc.trim())),
            "{} without its doc line",
            p.name
        );
    }
    // Any name a task selects it by.
    let by_fqcn = Command::new(bin)
        .args(["doc", "ansible.posix.sysctl"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(by_fqcn.stdout).unwrap(), page);

    let list = Command::new(bin).args(["doc", "--list"]).output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    assert_eq!(list.lines().count(), registry().len());
    assert!(list
        .lines()
        .any(|l| l.starts_with("swapfile ") && l.len() > 20));

    let unknown = Command::new(bin).args(["doc", "sysctll"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    let err = String::from_utf8(unknown.stderr).unwrap();
    assert!(
        err.contains("no native module named 'sysctll'; did you mean 'sysctl'?"),
        "{err}"
    );
}

/// The tasks under a page's Example heading.
fn example_of(page: &str) -> Option<String> {
    let section = page.split("\n## Example").nth(1)?;
    let yaml = section.split("```yaml\n").nth(1)?.split("\n```").next()?;
    Some(yaml.to_string())
}

#[test]
fn every_module_has_an_example_that_validates() {
    let bin = env!("CARGO_BIN_EXE_nodeprov");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/module_examples");
    let mut failures = Vec::new();
    for spec in registry() {
        let Some(tasks) = example_of(&module_doc::page(spec)) else {
            failures.push(format!("{}: no example", spec.name));
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&fixture, dir.path());
        let body: String = tasks.lines().map(|l| format!("    {l}\n")).collect();
        let playbook = format!("- hosts: all\n  gather_facts: false\n  tasks:\n{body}");
        let path = dir.path().join("example.yml");
        std::fs::write(&path, &playbook).unwrap();
        let out = Command::new(bin)
            .arg("validate")
            .arg(&path)
            .args(["-i", "node1,"])
            .output()
            .unwrap();
        if !out.status.success() {
            failures.push(format!(
                "{}:\n{playbook}{}",
                spec.name,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}
