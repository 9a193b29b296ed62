//! Real public Ansible content through the real binary: `validate` on each
//! case's play, and `check -c local` inside an isolated host. The figures must
//! equal the ones docs/ansible-projects.md states, so it stays true and a
//! regression (or progress) shows. Sources are in `tests/corpus/MANIFEST.tsv`,
//! each source repository's licence in `tests/corpus/licenses/`.
//!
//! A second, diagnostic pass inlines each case's task and handler files into
//! one plain play, as if roles and includes were supported, and counts which
//! constructs `validate` still refuses: the list of what blocks real content.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{assert_machine_unchanged, machine_digest, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
const FIGURES_DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ansible-projects.md");

/// A check that runs longer than this is a hang, recorded as the case's error.
const CHECK_TIMEOUT_S: &str = "120";

/// Drift found is check doing its job, not an error of the tool.
const CLEAN_CHECK_CODES: [i32; 2] = [0, 2];

/// Collection prefixes that name the same module as the short name.
const MODULE_PREFIXES: [&str; 3] = ["ansible.builtin.", "ansible.posix.", "community.general."];

#[test]
fn corpus_figures_match_the_docs() {
    let cases = case_dirs();
    assert!(cases.len() >= 40, "the corpus shrank to {}", cases.len());
    let before = machine_digest();

    let plays: Vec<PathBuf> = cases.iter().map(|c| c.join("play.yml")).collect();
    let checks = in_parallel(&plays, check);
    let mut validated = 0;
    let mut clean = 0;
    let mut lines = Vec::new();
    for ((case, validate), check) in cases.iter().zip(validated_with_17()).zip(&checks) {
        validated += usize::from(validate.is_ok());
        clean += usize::from(check.is_ok());
        lines.push(format!(
            "{}: validate {}; check {}",
            name(case),
            verdict(validate),
            verdict(check)
        ));
    }

    // In the cargo target tree, not /tmp, which an isolated host hides.
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("scratch dir");
    let (inlined_ok, blockers) = inlined_blockers(&cases, scratch.path());
    let mut inlined_clean = 0;
    let mut inlined_lines = Vec::new();
    let inlined_checks = in_parallel(&inlined_ok, check);
    for (play, check) in inlined_ok.iter().zip(&inlined_checks) {
        inlined_clean += usize::from(check.is_ok());
        let case = play
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("case name");
        inlined_lines.push(format!("{case} inlined: check {}", verdict(check)));
    }
    assert_machine_unchanged(&before);
    let total = cases.len();
    let summary = format!("corpus: {validated}/{total} validate, {clean}/{total} check clean");
    let inlined = format!(
        "corpus inlined: {}/{total} validate, {inlined_clean}/{} check clean",
        inlined_ok.len(),
        inlined_ok.len()
    );
    println!("{summary}\n{}", lines.join("\n"));
    println!("{inlined}\n{}", inlined_lines.join("\n"));
    println!("blockers once roles and includes are inlined (cases, construct):");
    for (count, what) in &blockers {
        println!("{count:4} {what}");
    }

    let readme = fs::read_to_string(FIGURES_DOC).expect("read the figures");
    for figure in [&summary, &inlined] {
        assert!(
            readme.contains(figure.as_str()),
            "docs/ansible-projects.md does not state `{figure}`"
        );
    }
}

#[test]
fn every_case_is_in_the_manifest_with_its_source() {
    let manifest = fs::read_to_string(Path::new(CORPUS).join("MANIFEST.tsv")).expect("MANIFEST");
    let mut rows = manifest.lines();
    let header: Vec<&str> = rows.next().expect("header").split('\t').collect();
    assert_eq!(
        header,
        [
            "case",
            "repository",
            "commit",
            "licence",
            "source paths",
            "exercises"
        ]
    );
    let listed: BTreeMap<&str, Vec<&str>> = rows
        .map(|row| {
            let fields: Vec<&str> = row.split('\t').collect();
            assert_eq!(fields.len(), header.len(), "MANIFEST row: {row}");
            (fields[0], fields)
        })
        .collect();
    for case in case_dirs() {
        let fields = listed
            .get(name(&case))
            .unwrap_or_else(|| panic!("{} is not in MANIFEST.tsv", name(&case)));
        let repo = fields[1]
            .strip_prefix("https://github.com/")
            .unwrap_or_else(|| panic!("not a GitHub repository: {fields:?}"));
        let licence_text = Path::new(CORPUS)
            .join("licenses")
            .join(format!("{}.txt", repo.replace('/', "--")));
        assert!(licence_text.is_file(), "no {}", licence_text.display());
        let commit = fields[2];
        assert!(
            commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{fields:?}"
        );
        assert!(!fields[3].is_empty() && !fields[4].is_empty(), "{fields:?}");
        assert!(
            case.join("play.yml").is_file(),
            "{} has no play.yml",
            name(&case)
        );
    }
}

fn case_dirs() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(CORPUS)
        .expect("list corpus")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_dir() && name(p).starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    cases.sort();
    cases
}

fn name(case: &Path) -> &str {
    case.file_name()
        .and_then(|n| n.to_str())
        .expect("case name")
}

fn verdict(result: &Result<i32, String>) -> String {
    match result {
        Ok(code) => format!("ok ({code})"),
        Err(first_error) => first_error.clone(),
    }
}

/// `f` of each play, a few at a time: each check waits mostly on its own
/// isolated host and process, so the machine's cores are kept busy.
fn in_parallel<T: Send>(plays: &[PathBuf], f: impl Fn(&Path) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(play) = plays.get(i) else { break };
                let r = f(play);
                results.lock().expect("not poisoned").insert(i, r);
            });
        }
    });
    results
        .into_inner()
        .expect("not poisoned")
        .into_values()
        .collect()
}

/// Each case's `validate` with the ansible-core 2.17 the figures are
/// measured with, in case order: run once for the tests that read it.
fn validated_with_17() -> &'static [Result<i32, String>] {
    static VALIDATED: std::sync::OnceLock<Vec<Result<i32, String>>> = std::sync::OnceLock::new();
    VALIDATED.get_or_init(|| {
        let plays: Vec<PathBuf> = case_dirs().iter().map(|c| c.join("play.yml")).collect();
        in_parallel(&plays, validate)
    })
}

/// A user who upgrades to the newest `ansible` package loses no case: each
/// case that validates with the 2.17 the figures are measured with
/// validates with the newest release too.
#[test]
fn no_case_validates_worse_with_the_newest_ansible() {
    let newest = venv_python("NODEPROV_ANSIBLE_NEWEST_VENV", "target/ansible-core-newest");
    let mut worse = Vec::new();
    let mut counts = (0, 0);
    let cases = case_dirs();
    let plays: Vec<PathBuf> = cases.iter().map(|c| c.join("play.yml")).collect();
    let newest = in_parallel(&plays, |play| validate_with(play, &newest));
    for ((case, with_17), with_newest) in cases.iter().zip(validated_with_17()).zip(newest) {
        let with_17 = with_17.is_ok();
        counts.0 += usize::from(with_17);
        counts.1 += usize::from(with_newest.is_ok());
        if with_17 {
            if let Err(e) = with_newest {
                worse.push(format!("{}: {e}", name(case)));
            }
        }
    }
    println!(
        "validate: {} with 2.17, {} with the newest ansible-core",
        counts.0, counts.1
    );
    assert!(
        worse.is_empty(),
        "worse with the newest ansible-core:\n{}",
        worse.join("\n")
    );
}

/// The Python of the ansible-core scripts/test.sh installs, so that tasks
/// nodeprov has no native module for run Ansible's own, as for a user with
/// ansible-core.
fn ansible_python() -> String {
    venv_python("NODEPROV_ANSIBLE_VENV", "target/ansible-venv")
}

/// The Python of a venv scripts/test.sh makes (relative to the project),
/// or of the one `var` names.
fn venv_python(var: &str, default: &str) -> String {
    let venv = std::env::var(var).unwrap_or(default.into());
    let python = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(venv)
        .join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test.sh, which installs ansible-core there",
        python.display()
    );
    python.display().to_string()
}

fn validate(play: &Path) -> Result<i32, String> {
    validate_with(play, &ansible_python())
}

/// Ok, or the first error line (all output when none looks like one).
fn validate_with(play: &Path, python: &str) -> Result<i32, String> {
    let out = Command::new(BIN)
        .env("NODEPROV_ANSIBLE_PYTHON", python)
        .arg("validate")
        .arg(play)
        .output()
        .expect("spawn nodeprov");
    outcome(out.status.code(), &out.stdout, &out.stderr, &[0])
}

/// `check -c local` inside a fresh isolated host: its /etc is a private copy
/// and /proc/sys/vm a fake, so nothing the case does can reach this machine.
fn check(play: &Path) -> Result<i32, String> {
    let host = IsolatedHost::new();
    let play = play.to_str().expect("utf-8 path");
    let python = format!("NODEPROV_ANSIBLE_PYTHON={}", ansible_python());
    let out = host.run(&[
        "env",
        &python,
        "timeout",
        CHECK_TIMEOUT_S,
        BIN,
        "check",
        "-c",
        "local",
        play,
    ]);
    if out.status.code() == Some(124) {
        return Err(format!("hung: no answer within {CHECK_TIMEOUT_S} s"));
    }
    outcome(
        out.status.code(),
        &out.stdout,
        &out.stderr,
        &CLEAN_CHECK_CODES,
    )
}

/// Ok, or the exit code with the first error: a load error from stderr, else
/// the first failed or unreachable task of the report with its message.
fn outcome(code: Option<i32>, stdout: &[u8], stderr: &[u8], clean: &[i32]) -> Result<i32, String> {
    let code = code.unwrap_or(-1);
    if clean.contains(&code) {
        return Ok(code);
    }
    let stderr = String::from_utf8_lossy(stderr);
    let stdout = String::from_utf8_lossy(stdout);
    let failed_task = || {
        let lines: Vec<&str> = stdout.lines().map(str::trim).collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("failed ") || l.starts_with("unreachable "))?;
        // A multi-line message comes escaped; its first line says what failed.
        let message = lines.get(at + 1).copied().unwrap_or_default();
        let message = message.split("\\x0a").next().unwrap_or_default();
        Some(format!("{} {message}", lines[at]))
    };
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error"))
        .map(str::to_string)
        .or_else(failed_task)
        .or_else(|| stderr.lines().next().map(str::to_string))
        .unwrap_or_else(|| "no message".into());
    Err(format!("exit {code}: {first}"))
}

/// Writes each case's inlined play into `scratch`; returns the plays that
/// validate, and each refused construct with the number of cases it blocks,
/// most frequent first.
fn inlined_blockers(cases: &[PathBuf], scratch: &Path) -> (Vec<PathBuf>, Vec<(usize, String)>) {
    let mut ok = Vec::new();
    let mut blocked: BTreeMap<String, usize> = BTreeMap::new();
    let plays: Vec<PathBuf> = cases
        .iter()
        .map(|case| {
            let play = scratch.join(format!("{}.yml", name(case)));
            fs::write(&play, inlined_play(case)).expect("write inlined play");
            play
        })
        .collect();
    let outputs = in_parallel(&plays, |play| {
        Command::new(BIN)
            .env("NODEPROV_ANSIBLE_PYTHON", ansible_python())
            .arg("validate")
            .arg(play)
            .output()
            .expect("spawn nodeprov")
    });
    for (play, out) in plays.into_iter().zip(outputs) {
        if out.status.success() {
            ok.push(play);
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let kinds: BTreeSet<String> = stderr.lines().filter_map(blocker).collect();
        for kind in kinds {
            *blocked.entry(kind).or_default() += 1;
        }
    }
    let mut ranked: Vec<(usize, String)> = blocked.into_iter().map(|(k, n)| (n, k)).collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    (ok, ranked)
}

/// One play holding every task file of the case under `tasks:` and every
/// handler file under `handlers:`, with the role's defaults and vars (and
/// group_vars the case carries) as `vars_files`. Indenting a block sequence
/// keeps its meaning; only document markers have to go.
fn inlined_play(case: &Path) -> String {
    let files = yaml_files(case);
    let under = |part: &str| -> Vec<&PathBuf> {
        files
            .iter()
            .filter(|f| f.components().any(|c| c.as_os_str() == part))
            .collect()
    };
    let mut play = String::from("- hosts: all\n");
    let vars: Vec<&PathBuf> = files
        .iter()
        .filter(|f| {
            f.ends_with("defaults/main.yml")
                || f.ends_with("vars/main.yml")
                || f.components().any(|c| c.as_os_str() == "group_vars")
        })
        .collect();
    if !vars.is_empty() {
        play.push_str("  vars_files:\n");
        for file in vars {
            play.push_str(&format!("    - {}\n", file.display()));
        }
    }
    for (key, part) in [("tasks", "tasks"), ("handlers", "handlers")] {
        let list = under(part);
        if list.is_empty() {
            continue;
        }
        play.push_str(&format!("  {key}:\n"));
        for file in list {
            let text = fs::read_to_string(file).expect("read case file");
            for line in text.lines() {
                if line.trim_end() != "---" && line.trim_end() != "..." {
                    play.push_str(&format!("    {line}\n"));
                }
            }
        }
    }
    play
}

fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .expect("list case dir")
        .map(|e| e.expect("case entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(yaml_files(&path));
        } else if path.extension().is_some_and(|e| e == "yml" || e == "yaml") {
            found.push(path);
        }
    }
    found
}

/// The construct an error line refuses, with collection prefixes dropped so
/// `stat` and `ansible.builtin.stat` count once; None for lines that only
/// follow from another error.
fn blocker(line: &str) -> Option<String> {
    let message = line.strip_prefix("error: ")?;
    if message.starts_with("this task names no module") {
        return None;
    }
    let mut kind = message.to_string();
    for prefix in MODULE_PREFIXES {
        kind = kind.replace(&format!("'{prefix}"), "'");
        kind = kind.replace(&format!("'with_{prefix}"), "'with_");
    }
    Some(quoted_values_elided(&kind))
}

/// Keeps quoted names of keywords, modules and parameters, but not quoted
/// values and paths, which differ per case (an apostrophe inside a word is
/// not a quote).
fn quoted_values_elided(message: &str) -> String {
    let names_a_construct = ["keyword", "module", "parameter", "filter", "test"]
        .iter()
        .any(|w| message.contains(w));
    if names_a_construct {
        return message.to_string();
    }
    let quoted = regex::Regex::new(r"(^|\W)'[^']*'").expect("valid regex");
    quoted.replace_all(message, "$1'…'").into_owned()
}
