//! Imports inside `src/modules` flow one way: the registry knows every
//! module, a module knows only the kit (`kit/`) and `params.rs`, and those
//! know no module. This reads the paths of `src/modules/**` as text and
//! fails on a module that names a sibling module, on the kit or `params`
//! naming a module, and on any cycle between files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Files that every module may use; everything else at the top level of
/// `src/modules` (other than `mod.rs` and `registry.rs`) is a module.
const SHARED: &[&str] = &["kit", "params"];

/// The module path of a file below `src/modules`: `copy.rs` → `[copy]`,
/// `sysctl/mod.rs` → `[sysctl]`, `kit/files.rs` → `[kit, files]`.
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The node a module path belongs to: a kit file (`kit/files`), a module
/// with all its files (`sysctl`), or `mod` for items of `mod.rs` itself.
fn node_of(path: &[String], tops: &BTreeSet<String>, kit: &BTreeSet<String>) -> String {
    match path {
        [] => "mod".into(),
        [k, sub, ..] if k == "kit" && kit.contains(sub) => format!("kit/{sub}"),
        [k, ..] if k == "kit" => "kit".into(),
        [top, ..] if tops.contains(top) => top.clone(),
        _ => "mod".into(),
    }
}

/// Expands one use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).trim().to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand)
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

/// Every path a file names: its `use` items and qualified paths in code,
/// resolved to module paths under `src/modules` (external crates dropped).
fn named_paths(rel: &str, text: &str, tops: &BTreeSet<String>) -> Vec<Vec<String>> {
    let own = module_path(rel);
    let mut out = Vec::new();
    // An inline `mod tests {` makes `super::` inside it mean the file itself.
    let mut here = own.clone();
    let mut statement = String::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        if code.trim_start().starts_with("mod tests {") {
            here = own.iter().cloned().chain(["tests".into()]).collect();
        }
        let t = code.trim_start();
        let t = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| t.strip_prefix(v))
            .unwrap_or(t);
        if statement.is_empty() && t.starts_with("use ") {
            statement = t.to_string();
        } else if !statement.is_empty() {
            statement.push_str(t);
        }
        if !statement.is_empty() {
            if !statement.contains(';') {
                continue;
            }
            let tree = statement.trim_start_matches("use ").trim_end_matches(';');
            for path in expand(tree) {
                out.extend(resolve(&path, &here, &own, tops, true));
            }
            statement.clear();
            continue;
        }
        for (i, _) in code.match_indices("::") {
            let start = code[..i]
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(0, |s| s + 1);
            if start < i && !code[start..i].contains("::") {
                let end = code[i..]
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                    .map_or(code.len(), |e| i + e);
                out.extend(resolve(&code[start..end], &here, &own, tops, false));
            }
        }
    }
    out
}

fn resolve(
    path: &str,
    here: &[String],
    own: &[String],
    tops: &BTreeSet<String>,
    in_use: bool,
) -> Option<Vec<String>> {
    let segs: Vec<String> = path
        .split("::")
        .filter(|s| !s.is_empty() && *s != "*")
        .map(String::from)
        .collect();
    let (base, rest): (Vec<String>, &[String]) = match segs.first()?.as_str() {
        "crate" if segs.get(1).is_some_and(|s| s == "modules") => (Vec::new(), &segs[2..]),
        "super" => {
            let mut base = here.to_vec();
            let mut rest = &segs[..];
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        "self" => (here.to_vec(), &segs[1..]),
        // A child module by its bare name: `pub use kit::…` or
        // `copy::COPY` in `mod.rs`, `use config::X` in `sysctl/mod.rs`.
        first if own.is_empty() && tops.contains(first) => (Vec::new(), &segs[..]),
        first if in_use && own.len() == 1 && own[0] != "kit" && !tops.contains(first) => {
            (own.to_vec(), &segs[..])
        }
        _ => return None,
    };
    Some(base.into_iter().chain(rest.iter().cloned()).collect())
}

/// Every rule broken by the files `(path below src/modules, text)`.
fn problems(files: &[(String, String)]) -> Vec<String> {
    let tops: BTreeSet<String> = files
        .iter()
        .map(|(rel, _)| module_path(rel))
        .filter_map(|p| p.first().cloned())
        .collect();
    let kit: BTreeSet<String> = files
        .iter()
        .map(|(rel, _)| module_path(rel))
        .filter(|p| p.len() == 2 && p[0] == "kit")
        .map(|p| p[1].clone())
        .collect();
    let is_module = |n: &str| !n.starts_with("kit") && !["mod", "registry", "params"].contains(&n);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut out = Vec::new();
    for (rel, text) in files {
        let from = node_of(&module_path(rel), &tops, &kit);
        for path in named_paths(rel, text, &tops) {
            let to = node_of(&path, &tops, &kit);
            if to == from {
                continue;
            }
            let shared = SHARED.iter().any(|s| from == *s || from.starts_with("kit"));
            if is_module(&from) && is_module(&to) {
                out.push(format!("module {from} ({rel}) imports module {to}"));
            } else if shared && (is_module(&to) || to == "registry" || to == "mod") {
                out.push(format!(
                    "{from} ({rel}) is shared by modules but names {to}"
                ));
            }
            edges.entry(from.clone()).or_default().insert(to);
        }
    }
    out.extend(cycles(&edges));
    out.sort();
    out.dedup();
    out
}

/// One message per cycle found by a depth-first search.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        out: &mut Vec<String>,
    ) {
        if let Some(i) = stack.iter().position(|s| s == n) {
            out.push(format!("import cycle: {} -> {n}", stack[i..].join(" -> ")));
            return;
        }
        if !done.insert(n.to_string()) {
            return;
        }
        stack.push(n.to_string());
        for next in edges.get(n).into_iter().flatten() {
            visit(next, edges, stack, done, out);
        }
        stack.pop();
    }
    let mut out = Vec::new();
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        visit(n, edges, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

fn read_tree(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            read_tree(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn modules_import_only_the_kit_and_nothing_imports_in_a_cycle() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/modules");
    let mut files = Vec::new();
    read_tree(&base, &base, &mut files);
    assert!(files.len() > 10, "read {} files", files.len());
    let found = problems(&files);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn tree(files: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut all = vec![
        (
            "mod.rs".to_string(),
            "pub mod a;\npub use registry::find;\n".to_string(),
        ),
        ("registry.rs".into(), "use crate::modules::{a, b};\n".into()),
        ("kit/plan.rs".into(), "pub struct Plan;\n".into()),
        ("params.rs".into(), "pub struct Params;\n".into()),
    ];
    all.extend(files.iter().map(|(p, t)| (p.to_string(), t.to_string())));
    all
}

#[test]
fn the_check_catches_sibling_imports_kit_leaks_and_cycles() {
    let clean = tree(&[
        ("a.rs", "use crate::modules::kit::plan::Plan;\nuse super::params::Params;\n"),
        ("b.rs", "pub(crate) use crate::modules::kit::{plan::Plan};\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
    ]);
    assert_eq!(problems(&clean), Vec::<String>::new());

    let sibling = tree(&[
        ("a.rs", "pub(crate) use super::b::{\n    helper,\n};\n"),
        ("b.rs", "fn f() { crate::modules::a::g(); }\n"),
    ]);
    let found = problems(&sibling);
    assert!(
        found.contains(&"module a (a.rs) imports module b".to_string()),
        "{found:?}"
    );
    assert!(
        found.contains(&"module b (b.rs) imports module a".to_string()),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.starts_with("import cycle: a -> b")),
        "{found:?}"
    );

    let through_mod = tree(&[("a.rs", "use super::{Plan, Params};\n"), ("b.rs", "")]);
    let found = problems(&through_mod);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("import cycle:") && p.contains("registry")),
        "{found:?}"
    );

    let leak = tree(&[
        ("kit/files.rs", "use crate::modules::ModuleError;\n"),
        ("a.rs", ""),
        ("b.rs", ""),
    ]);
    let found = problems(&leak);
    assert!(
        found.contains(&"kit/files (kit/files.rs) is shared by modules but names mod".to_string()),
        "{found:?}"
    );
}

/// `src/base` is the ground floor: its code names nothing of the crate
/// above it (its tests may use the loaders' fuzzing kit).
#[test]
fn the_ground_floor_imports_nothing_above_it() {
    let mut upward = Vec::new();
    for entry in std::fs::read_dir("src/base").unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.lines().take_while(|l| !l.starts_with("#[cfg(test)]"));
        for (i, line) in code.enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let mut rest = code;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                if !rest.starts_with("base::") {
                    upward.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(upward.is_empty(), "{}", upward.join("\n"));
}
