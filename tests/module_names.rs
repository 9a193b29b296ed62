//! Outside `src/modules` no code asks which module a task runs: what the
//! loader and the schedule need to know is the module's declared kind
//! (`ModuleSpec.kind`) or another field of its spec, so a new module of an
//! old kind needs no edit elsewhere. This reads `src/` as text (tests
//! aside) and fails on a module's name compared as a string literal.

use std::path::Path;

use nodeprov::modules::registry;

/// A line about a module that holds `== "meta"`, `!= "meta"`,
/// `"meta" |`, `| "meta"` or `"meta" =>`. (Playbook keywords and other
/// words that are also module names, `user`, `fail`, are matched freely.)
fn compares(code: &str, name: &str) -> bool {
    if !code.contains("module") {
        return false;
    }
    let quoted = format!("\"{name}\"");
    [
        format!("== {quoted}"),
        format!("!= {quoted}"),
        format!("{quoted} |"),
        format!("| {quoted}"),
        format!("{quoted} =>"),
    ]
    .iter()
    .any(|p| code.contains(p.as_str()))
}

/// A file's lines before its inline tests.
fn production_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, l)| !l.starts_with("#[cfg(test)]"))
        .map(|(i, l)| (i + 1, l.split("//").next().unwrap_or("")))
}

fn scan(dir: &Path, names: &[&str], found: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if path != Path::new("src/modules") {
                scan(&path, names, found);
            }
            continue;
        }
        if !file.ends_with(".rs") || file == "tests.rs" || file.ends_with("_tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, code) in production_lines(&text) {
            for name in names.iter().filter(|n| compares(code, n)) {
                found.push(format!("{}:{line}: compares `{name}`", path.display()));
            }
        }
    }
}

#[test]
fn no_module_name_is_compared_outside_the_modules() {
    let names: Vec<&str> = registry().iter().flat_map(|s| s.names()).collect();
    let mut found = Vec::new();
    scan(Path::new("src"), &names, &mut found);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_scan_sees_each_form_of_comparison() {
    for code in [
        "if task.module.name == \"meta\" {",
        "matches!(task.module.name, \"reboot\" | \"pause\")",
        "let (module, files) = match name { \"copy\" => (\"src\", &[\"\"]),",
    ] {
        assert!(
            ["meta", "reboot", "copy"].iter().any(|n| compares(code, n)),
            "{code}"
        );
    }
    assert!(!compares("format!(\"module meta: {x}\")", "meta"));
    assert!(!compares("\"user\" => set_once(&mut cfg.user, v)", "user"));
}
