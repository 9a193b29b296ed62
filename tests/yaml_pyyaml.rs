//! nodeprov's YAML reader against PyYAML's safe loader (Ansible's reader,
//! with its tags such as `!vault` and `!unsafe` read as their plain values):
//! every YAML file the project keeps (the corpus of real roles, the
//! playbooks, the fixtures) must read to the same value, or fail in both.
//! Documents PyYAML reads where the YAML 1.2 specification does not
//! (indentation inside flow collections and quoted scalars) are held too.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::newest_ansible_bin;

/// Reads each file named on the command line as Ansible's loader does
/// (tags kept as the value they tag; dates as a template shows them) and prints one JSON
/// object: per file its value, or the first line of its error.
const PYYAML: &str = r#"
import sys, json, yaml, datetime
class Loader(yaml.SafeLoader):
    pass
def tagged(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)
Loader.add_multi_constructor('!', tagged)
def default(o):
    # As a template shows the value: str() of a date or a time.
    return str(o)
out = {}
for f in sys.argv[1:]:
    try:
        with open(f, encoding='utf-8') as text:
            value = yaml.load(text, Loader=Loader)
        out[f] = {"value": json.loads(json.dumps(value, default=default))}
    except Exception as e:
        out[f] = {"error": str(e).splitlines()[0]}
print(json.dumps(out))
"#;

/// Documents PyYAML reads that the YAML 1.2 specification refuses.
const LENIENT: &[(&str, &str)] = &[
    (
        "closing brace in column 0",
        "- hosts: all\n  vars:\n    x: {a: 1,\n    b: 2\n}\n",
    ),
    (
        "flow content left of the block",
        "tasks:\n  - set_fact:\n      rule: {\n  id: 7, name: x}\n",
    ),
    (
        "quoted scalar continued in column 0",
        "a:\n  b: \"one\ntwo\"\n  c: 'three\nfour'\n",
    ),
    (
        "flow collections continued in column 0",
        "a:\n  list: [1,\n2]\n  items:\n    - {x: 1,\ny: 2}\n",
    ),
];

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            out.push(path);
        }
    }
}

fn pyyaml(files: &[PathBuf]) -> serde_json::Map<String, Value> {
    let out = Command::new(newest_ansible_bin().join("python"))
        .arg("-c")
        .arg(PYYAML)
        .args(files)
        .output()
        .unwrap();
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Object(m)) => m,
        _ => panic!("PyYAML: {}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// Files where nodeprov reads otherwise, each with why.
const DIFFERENCES: &[(&str, &str)] = &[(
    "tests/projects/deepops/config.example/nvidia-mig-config.yml",
    "a key given twice in one mapping is refused with both places; PyYAML keeps the last one \
     and Ansible warns (its default `duplicate_dict_key: warn`)",
)];

/// Where nodeprov's reader and PyYAML part, for each file.
fn differences(files: &[PathBuf]) -> Vec<String> {
    let theirs = pyyaml(files);
    let mut differ = Vec::new();
    for file in files {
        let name = file.display().to_string();
        let ours = nodeprov::load::yaml::load_file(file).map(|n| n.to_json());
        match (&ours, &theirs[&name]) {
            (Ok(v), t) if t.get("value") == Some(v) => {}
            (Err(_), t) if t.get("error").is_some() => {}
            (ours, t) => {
                let ours = match ours {
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error: {}", e.to_string().lines().next().unwrap_or("")),
                };
                let ours: String = ours.chars().take(300).collect();
                let t: String = t.to_string().chars().take(300).collect();
                differ.push(format!("{name}\n  nodeprov: {ours}\n  PyYAML:   {t}"));
            }
        }
    }
    differ
}

/// Every file reads alike but those `known` lists (by their path under
/// `base`), each of which must still differ.
fn read_alike(files: &[PathBuf], base: &Path, known: &[(&str, &str)]) {
    let differ = differences(files);
    let listed = |d: &String| {
        known
            .iter()
            .any(|(f, _)| d.starts_with(&base.join(f).display().to_string()))
    };
    let unlisted: Vec<&str> = (differ.iter())
        .filter(|d| !listed(d))
        .map(String::as_str)
        .collect();
    assert!(
        unlisted.is_empty(),
        "{} of {} files differ:\n{}",
        unlisted.len(),
        files.len(),
        unlisted.join("\n")
    );
    for (file, _) in known {
        let path = base.join(file).display().to_string();
        assert!(
            differ.iter().any(|d| d.starts_with(&path)),
            "{file} reads alike now: drop it from the known differences"
        );
    }
}

#[test]
fn every_yaml_file_of_the_project_reads_as_pyyaml_reads_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["tests", "playbooks", "deploy", "templates"] {
        yaml_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 500, "{} files", files.len());
    read_alike(&files, root, DIFFERENCES);
}

#[test]
fn what_pyyaml_reads_beyond_the_specification_nodeprov_reads_alike() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = LENIENT
        .iter()
        .enumerate()
        .map(|(n, (_, text))| {
            let path = dir.path().join(format!("{n}.yml"));
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect();
    let theirs = pyyaml(&files);
    for (file, (what, _)) in files.iter().zip(LENIENT) {
        let read = &theirs[&file.display().to_string()];
        assert!(
            read.get("value").is_some(),
            "{what}: PyYAML refuses it: {read}"
        );
    }
    let differ = differences(&files);
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Target files where nodeprov reads otherwise, each with why.
const TARGET_DIFFERENCES: &[(&str, &str)] = &[
    (
        "yaml_parsing/playbook.yml",
        "a key given twice in one mapping is refused; PyYAML keeps the last one",
    ),
    (
        "roles_arg_spec/test_complex_role_fails.yml",
        "a `!!binary` scalar stays its base64 text; PyYAML makes it bytes",
    ),
];

/// The YAML of ansible-core's own integration targets (all of them, not
/// only those the conformance suite runs), but vaulted files, which
/// nodeprov's reader decrypts where PyYAML keeps the vault text.
#[test]
fn every_yaml_file_of_ansibles_integration_targets_reads_as_pyyaml_reads_it() {
    let dir = support::conformance_targets();
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    files.retain(|f| !std::fs::read_to_string(f).is_ok_and(|text| text.contains("$ANSIBLE_VAULT")));
    files.sort();
    assert!(files.len() > 1000, "{} files", files.len());
    read_alike(&files, &dir, TARGET_DIFFERENCES);
}
