//! Filters and tests, nodeprov against ansible-core's own Templar.
//!
//! Every `ansible.builtin` filter and test that the newest ansible-core
//! (the one scripts/test.sh installs) lists is evaluated on the examples of
//! its own documentation (`ansible-doc --json` EXAMPLES, read at test time),
//! on edge values (None, undefined, unicode, nested lists, a mapping,
//! numbers, the empty string) and on the keyword arguments real content
//! passes. One playbook of `debug` tasks runs through `nodeprov apply -c
//! local` (a `debug` task touches nothing), and each task's message is
//! rendered by ansible-core's Templar in the variables such a task sees
//! (tests/templar/evaluate.py: one Python process, where ansible-playbook
//! costs a worker process per task); each value crosses as `to_json` text,
//! so a value and its type are compared, and `to_json` itself is compared
//! by its text.
//!
//! A case passes when both fail or both give the same value. Every other
//! case must be listed in [`DIFFERENCES`] with its reason, and a listed case
//! that no longer differs fails the test, so the list stays true. Filters
//! whose value is drawn at random are compared by outcome only.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use support::newest_ansible_bin;

/// Values every filter and test is also given.
const EDGES: &[&str] = &[
    "none",
    "undefined_thing",
    "'ünï €'",
    "[[1, [2, 'x']], 3, none]",
    "{'b': 1, 'a': [none, 'ü']}",
    "42",
    "-1.5",
    "''",
    "true",
    "'a,B c'",
];

/// Keyword arguments and forms real content uses, beyond the examples.
const EXTRA: &[&str] = &[
    "{'b': 'ü', 'a': [1.0, 1e16, none]} | to_json(sort_keys=true)",
    "{'b': 'ü'} | to_json(ensure_ascii=false)",
    "{'b': 'ü', 'a': {'c': [1, {}]}} | to_json(indent=2)",
    "{'b': 'ü', 'a': {'c': [1, {}]}} | to_nice_json(indent=2)",
    "{'z': {'y': [1, {'x': 'a: b'}], 'w': 'multi\\nline'}, 'a': ['yes', 'y', '1:30', '']} | to_nice_yaml",
    "{'z': {'y': [1, {'x': 'a: b'}], 'w': 'multi\\nline'}, 'a': ['yes', 'y', '1:30', '']} | to_yaml",
    "[{'a': 1}, [2, 3], 'x\\ty'] | to_yaml(indent=4)",
    "{'b': 1, 'a': 2} | to_nice_yaml(sort_keys=false)",
    "[{'a': [1]}, {'a': [2], 'b': 1}] | combine",
    "{'a': [1, 2]} | combine({'a': [2, 3]}, list_merge='append_rp')",
    "{'a': [1, 2]} | combine({'a': [2, 3]}, list_merge='prepend')",
    "{'a': {'x': 1, 'l': [1]}} | combine({'a': {'y': 2, 'l': [2]}}, recursive=true, list_merge='append')",
    "{'a': 1} | combine(none, {'b': 2})",
    "'text\\nmore' | comment('cblock')",
    "'text' | comment('xml', decoration='* ', prefix_count=2)",
    "'text' | comment(beginning='BEGIN', end='END', newline='\\n')",
    "'secret' | password_hash('sha512', 'mysalt12', rounds=5000)",
    "'secret' | password_hash('md5', 'mysalt12')",
    "'a.b.c' | regex_replace('\\\\.', '-', count=1)",
    "'abc' | regex_replace('x', 'y', mandatory_count=1)",
    "'ABC abc' | regex_search('abc', ignorecase=true)",
    "['a', 'A', 'b'] | unique(case_sensitive=true)",
    "[1, [2, [3, none, 'None']]] | flatten(levels=1)",
    "[1, [2, none]] | flatten(skip_nulls=false)",
    "[1, 2] | product('ab', repeat=2)",
    "'ü€' | b64encode(urlsafe=true)",
    "'w4zigqw=' | b64decode",
    "none | quote",
    "\"it's\" | quote",
    "{'failed': 'yes'} is failed",
    "{'changed': true} is changed",
    "[{'changed': true}] is changed",
    "'/tmp/a.tar.gz' | splitext",
    "'2016-08-14 20:00:12' | to_datetime",
];

/// Filters and tests whose value is drawn at random: compared by outcome.
const RANDOM: &[&str] = &["random", "shuffle", "password_hash", "vault", "strftime"];

/// Cases that differ, each with why. An entry names the case's expression.
const DIFFERENCES: &[(&str, &str)] = &[
    // Ansible (crypt or passlib) hashes what nodeprov does not implement.
    ("'vagrant-libvirt' | password_hash(hashtype='bcrypt')", BCRYPT),
    ("'vagrant-libvirt' | password_hash(hashtype='bcrypt', salt='abcdefghijklmnopqrstuv')", BCRYPT),
    ("'my_sensitive_data' | vault('another_vault_password', salt=(2**256 | random(seed=inventory_hostname)))", BIG_INT),
    // Python decodes any bytes into surrogate escapes; nodeprov refuses
    // text that is not UTF-8, and base64 that is not base64.
    ("(none) | b64decode", NOT_UTF8),
    ("([[1, [2, 'x']], 3, none]) | b64decode", NOT_UTF8),
    ("(true) | b64decode", NOT_UTF8),
    // A datetime cannot cross as JSON: nodeprov gets its text.
    ("((\"2016-08-14 20:00:12\" | to_datetime) - (\"2015-12-25\" | to_datetime(\"%Y-%m-%d\"))).total_seconds()", DATETIME),
    ("((\"2016-08-14 20:00:12\" | to_datetime) - (\"2016-08-14 18:00:00\" | to_datetime)).seconds", DATETIME),
    ("((\"2016-08-14 20:00:12\" | to_datetime) - (\"2015-12-25\" | to_datetime('%Y-%m-%d'))).days", DATETIME),
    // ansible-core 2.19+ hands filters a marker for an undefined value.
    ("myvar | type_debug", UNDEFINED_MARKER),
    ("(undefined_thing) | type_debug", UNDEFINED_MARKER),
    // A test of an undefined value answers as in ansible-core 2.15-2.18
    // (Jinja's StrictUndefined); 2.19+ fails the task.
    ("(undefined_thing) is ", UNDEFINED_TEST),
    // Jinja's lazy generators: Ansible lists `map`/`selectattr` of None or
    // '' without the name they need as []; nodeprov asks for the name.
    ("(none) | map", LAZY),
    ("('') | map", LAZY),
    ("(none) | selectattr", LAZY),
    ("('') | selectattr", LAZY),
    ("(none) | rejectattr", LAZY),
    ("('') | rejectattr", LAZY),
    // Python cannot order an int and a list; minijinja orders any values.
    ("([[1, [2, 'x']], 3, none]) | min", MIXED),
    ("([[1, [2, 'x']], 3, none]) | max", MIXED),
    ("([[1, [2, 'x']], 3, none]) | sort", MIXED),
    // Jinja's `test` and `filter` tests look a name up; None and a number
    // name nothing in nodeprov.
    ("(none) is test", NAME_TEST),
    ("(-1.5) is test", NAME_TEST),
    ("(42) is test", NAME_TEST),
    ("(true) is test", NAME_TEST),
    ("(none) is filter", NAME_TEST),
    ("(-1.5) is filter", NAME_TEST),
    ("(42) is filter", NAME_TEST),
    ("(true) is filter", NAME_TEST),
    // Python's bool is an int; minijinja's is not a number.
    ("(true) | abs", BOOL_INT),
    ("(true) | round", BOOL_INT),
    ("(true) | random", BOOL_INT),
    ("'2016-08-14 20:00:12' | to_datetime", DATETIME),
    // Python's os.path takes a number as a file descriptor.
    ("(42) is directory", FD),
    ("(42) is is_dir", FD),
    ("(42) is exists", FD),
    ("(42) is file", FD),
    ("(42) is is_file", FD),
    ("(true) is directory", FD),
    ("(true) is is_dir", FD),
    ("(true) is exists", FD),
    ("(true) is file", FD),
    ("(true) is is_file", FD),
];

const BCRYPT: &str = "bcrypt is not implemented natively; nodeprov refuses it";
const BIG_INT: &str = "2**256 overflows nodeprov's 128-bit integers; refused";
const NOT_UTF8: &str = "decoded bytes that are not UTF-8 are refused";
const DATETIME: &str = "a datetime crosses from ansible-core as its text; arithmetic on it fails";
const UNDEFINED_MARKER: &str =
    "ansible-core 2.19+ names its undefined marker; nodeprov refuses the undefined value";
const UNDEFINED_TEST: &str = "a test of an undefined value answers as ansible-core 2.15-2.18 does";
const LAZY: &str =
    "Ansible lists an unused lazy generator as []; nodeprov asks for the missing name";
const MIXED: &str = "minijinja orders values Python cannot compare";
const NAME_TEST: &str = "Jinja's name lookup of a non-string; nodeprov refuses it";
const BOOL_INT: &str = "arithmetic on a bool is refused";
const FD: &str =
    "os.path tests read a number as a file descriptor; nodeprov refuses a path that is no string";

struct Case {
    kind: String,
    name: String,
    expr: String,
    vars: Value,
}

fn cases() -> Vec<Case> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/templar/doc_examples.py");
    let out = Command::new(newest_ansible_bin().join("python"))
        .arg(script)
        .arg(newest_ansible_bin().join("ansible-doc"))
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let documented: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut cases = Vec::new();
    let mut names = BTreeSet::new();
    for doc in documented {
        let (kind, name) = (doc["kind"].as_str().unwrap(), doc["name"].as_str().unwrap());
        names.insert((kind.to_string(), name.to_string()));
        if let Some(expr) = doc["expr"].as_str() {
            cases.push(Case {
                kind: kind.into(),
                name: name.into(),
                expr: expr.into(),
                vars: doc["vars"].clone(),
            });
        }
    }
    assert!(names.len() > 100, "ansible-doc listed only {names:?}");
    for (kind, name) in &names {
        for edge in EDGES {
            let expr = match kind.as_str() {
                "filter" => format!("({edge}) | {name}"),
                _ => format!("({edge}) is {name}"),
            };
            cases.push(Case {
                kind: kind.clone(),
                name: name.clone(),
                expr,
                vars: json!({}),
            });
        }
    }
    for expr in EXTRA {
        let name = expr
            .rsplit_once(" | ")
            .or_else(|| expr.rsplit_once(" is "))
            .map(|(_, f)| f.split('(').next().unwrap_or(f))
            .unwrap();
        cases.push(Case {
            kind: if expr.contains(" is ") {
                "test"
            } else {
                "filter"
            }
            .into(),
            name: name.into(),
            expr: expr.to_string(),
            vars: json!({}),
        });
    }
    cases
}

/// The message a case's task shows: `J` and its value as JSON text.
fn debug_msg(case: &Case) -> String {
    format!("{{{{ 'J' ~ (({}) | to_json) }}}}", case.expr)
}

/// The playbook, one task per line: task `i` of `live` is on line `i + 2`.
fn playbook(cases: &[Case], live: &[usize]) -> String {
    let mut text =
        String::from("[{\"hosts\": \"localhost\", \"gather_facts\": false, \"tasks\": [\n");
    for (n, &i) in live.iter().enumerate() {
        let task = json!({
            "name": format!("case {i}"),
            "debug": {"msg": debug_msg(&cases[i])},
            "vars": cases[i].vars,
            "ignore_errors": true,
        });
        text.push_str(&task.to_string());
        text.push_str(if n + 1 < live.len() { ",\n" } else { "\n" });
    }
    text.push_str("]}]\n");
    text
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Value(Value),
    Failed(String),
}

/// `J<json>` from a debug message, as the value it holds; text JSON
/// cannot read (a lone surrogate Python made) stays text, so it compares
/// unequal rather than as a failure.
fn outcome_of(msg: &str) -> Outcome {
    match msg.strip_prefix('J').map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => Outcome::Value(v),
        _ => Outcome::Value(Value::String(msg.to_string())),
    }
}

/// nodeprov's outcomes by case. A template error (a syntax error, an
/// unknown test in the documentation's own examples) fails its task when
/// it runs, as in Ansible, and the next case runs (`ignore_errors`).
fn nodeprov(dir: &Path, cases: &[Case]) -> BTreeMap<usize, Outcome> {
    let live: Vec<usize> = (0..cases.len()).collect();
    std::fs::write(dir.join("site.yml"), playbook(cases, &live)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nodeprov"))
        .args(["apply", "site.yml", "-c", "local", "--format", "json"])
        .env(
            "NODEPROV_ANSIBLE_PYTHON",
            newest_ansible_bin().join("python"),
        )
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {stderr}"));
    let tasks = report["hosts"][0]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), live.len(), "{stderr}");
    let outcomes = live.iter().zip(tasks).map(|(&i, task)| {
        let outcome = match task["status"].as_str() {
            Some("failed") => Outcome::Failed(task["message"].to_string()),
            _ => task["notes"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|n| n.as_str()?.strip_prefix("msg: "))
                .map_or(Outcome::Failed(format!("no msg: {task}")), outcome_of),
        };
        (i, outcome)
    });
    outcomes.collect()
}

fn ansible(dir: &Path, cases: &[Case]) -> BTreeMap<usize, Outcome> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/templar/evaluate.py");
    let input: Vec<Value> = cases
        .iter()
        .map(|c| json!({"msg": debug_msg(c), "vars": c.vars}))
        .collect();
    let mut child = Command::new(newest_ansible_bin().join("python"))
        .arg(script)
        .env("HOME", dir)
        .env("ANSIBLE_LOCAL_TEMP", dir)
        .env("ANSIBLE_LOCALHOST_WARNING", "false")
        .env("ANSIBLE_DEPRECATION_WARNINGS", "false")
        .env_remove("ANSIBLE_CONFIG")
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || serde_json::to_writer(stdin, &input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let rendered: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ansible-core's Templar gave no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(rendered.len(), cases.len());
    rendered
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let outcome = match r["failed"].as_bool() == Some(true) {
                true => Outcome::Failed(r["msg"].to_string()),
                false => outcome_of(r["msg"].as_str().unwrap_or_default()),
            };
            (i, outcome)
        })
        .collect()
}

/// The entry of [`DIFFERENCES`] that lists `expr`: by the whole
/// expression, or by its start where the entry ends with `| ` or `is `.
fn documented(expr: &str) -> Option<usize> {
    DIFFERENCES.iter().position(|(listed, _)| {
        match listed.ends_with("| ") || listed.ends_with("is ") {
            true => expr.starts_with(listed),
            false => expr == *listed,
        }
    })
}

#[test]
fn builtin_filters_and_tests_give_what_ansible_core_gives() {
    let cases = cases();
    let dir = tempfile::tempdir().unwrap();
    let ours = nodeprov(dir.path(), &cases);
    let theirs = ansible(dir.path(), &cases);
    let mut undocumented = Vec::new();
    let mut used = BTreeSet::new();
    let mut same = 0;
    for (i, case) in cases.iter().enumerate() {
        let Some(a) = theirs.get(&i) else {
            panic!("ansible-playbook did not run case {i} ({})", case.expr);
        };
        let Some(n) = ours.get(&i) else {
            panic!("case {i} ({}) has no outcome", case.expr);
        };
        let equal = match (a, n) {
            (Outcome::Failed(_), Outcome::Failed(_)) => true,
            (Outcome::Value(a), Outcome::Value(n)) => {
                a == n || RANDOM.contains(&case.name.as_str())
            }
            _ => false,
        };
        match (equal, documented(&case.expr)) {
            (true, _) => same += 1,
            (false, Some(entry)) => {
                used.insert(entry);
            }
            (false, None) => undocumented.push(format!(
                "{} {}: {}\n    ansible-core: {a:?}\n    nodeprov:     {n:?}",
                case.kind, case.name, case.expr
            )),
        }
    }
    let stale: Vec<_> = DIFFERENCES
        .iter()
        .enumerate()
        .filter(|(n, _)| !used.contains(n))
        .map(|(_, d)| d.0)
        .collect();
    println!(
        "{} cases: {same} equal, {} documented differences",
        cases.len(),
        cases.len() - same - undocumented.len(),
    );
    assert!(
        undocumented.is_empty(),
        "{} undocumented differences:\n{}",
        undocumented.len(),
        undocumented.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed differences that no longer differ: {stale:?}"
    );
    assert!(same > 1000, "only {same} cases compared equal");
}
