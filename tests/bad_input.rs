//! The bad-input corpus: malformed and hostile playbooks, inventories, vars,
//! templates, flags and special files, each run through the real binary under
//! a time and memory cap. Every case asserts the exit code and the words a
//! user needs (file:line:col, what was expected); none may panic or hang.
//!
//! A case is one `tests/bad_input/**/*.txtar` file: a header of directives,
//! then the files it needs, each after a `-- name --` line.
//!
//! ```text
//! # why this case exists (comment lines are ignored)
//! run: validate pb.yml -i hosts.ini     # arguments, split as sh would
//! setup: printf '\357\273\277' >bom.yml # optional sh lines, run first
//! exit: 1
//! stderr: pb.yml:2:3                    # each must appear in stderr
//! stdout: ...                           # each must appear in stdout
//! -- pb.yml --
//! - hosts: all
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

/// Wall-clock cap per case: a loader that takes longer has hung or gone
/// quadratic.
const CASE_TIMEOUT_S: u32 = 20;
/// Peak RSS any case may reach.
const MAX_RSS_KIB: i64 = 256 * 1024;
/// Address-space cap, so a runaway allocation fails fast instead of taking
/// the machine's memory while the RSS check waits for it to end.
const ADDRESS_SPACE_CAP: u64 = 2 << 30;
/// Errors quote source lines; a 50 MB line must not come back whole.
const MAX_STDERR_BYTES: usize = 64 * 1024;

#[derive(Default, Debug)]
struct Case {
    run: String,
    setup: Vec<String>,
    exit: Option<i32>,
    stderr: Vec<String>,
    stdout: Vec<String>,
    files: Vec<(String, String)>,
}

fn parse_case(text: &str) -> Result<Case, String> {
    let mut case = Case::default();
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next_if(|l| file_marker(l).is_none()) {
        let line = line.trim_end_matches('\n');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .ok_or_else(|| format!("header line without a directive: {line}"))?;
        let value = value.trim().to_string();
        match key {
            "run" => case.run = value,
            "setup" => case.setup.push(value),
            "exit" => case.exit = Some(value.parse().map_err(|_| format!("exit: {value}"))?),
            "stderr" => case.stderr.push(value),
            "stdout" => case.stdout.push(value),
            other => return Err(format!("unknown directive {other:?}")),
        }
    }
    while let Some(marker) = lines.next() {
        let name = file_marker(marker).expect("loop stops only at markers");
        let mut body = String::new();
        while let Some(line) = lines.next_if(|l| file_marker(l).is_none()) {
            body.push_str(line);
        }
        case.files.push((name.to_string(), body));
    }
    if case.run.is_empty() || case.exit.is_none() {
        return Err("a case needs `run:` and `exit:`".into());
    }
    Ok(case)
}

fn file_marker(line: &str) -> Option<&str> {
    line.trim_end_matches('\n')
        .strip_prefix("-- ")?
        .strip_suffix(" --")
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("corpus folder") {
        let path = entry.unwrap().path();
        if path.is_dir() {
            case_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "txtar") {
            out.push(path);
        }
    }
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    stderr_len: usize,
}

fn run_case(case: &Case) -> Result<Outcome, String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in &case.files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
    for line in &case.setup {
        let status = Command::new("sh")
            .args(["-c", line])
            .current_dir(dir.path())
            .status()
            .unwrap();
        if !status.success() {
            return Err(format!("setup failed: {line}"));
        }
    }
    let script = format!(
        "ulimit -v {}; exec timeout -s KILL {CASE_TIMEOUT_S} \"$NODEPROV\" {}",
        ADDRESS_SPACE_CAP / 1024,
        case.run
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("NODEPROV", env!("CARGO_BIN_EXE_nodeprov"))
        .env("NO_COLOR", "1")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Ok(Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stderr_len: out.stderr.len(),
    })
}

fn judge(case: &Case, out: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    if out.code == Some(137) || out.code.is_none() {
        problems.push(format!(
            "killed (hung past {CASE_TIMEOUT_S} s or out of memory)"
        ));
    } else if out.code != case.exit {
        problems.push(format!("exit {:?}, expected {:?}", out.code, case.exit));
    }
    if out.stderr.contains("panicked") {
        problems.push("panicked".into());
    }
    if out.stderr_len > MAX_STDERR_BYTES {
        problems.push(format!("{} bytes of stderr", out.stderr_len));
    }
    for want in &case.stderr {
        if !out.stderr.contains(want.as_str()) {
            problems.push(format!("stderr lacks {want:?}"));
        }
    }
    for want in &case.stdout {
        if !out.stdout.contains(want.as_str()) {
            problems.push(format!("stdout lacks {want:?}"));
        }
    }
    problems
}

fn children_peak_rss_kib() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

#[test]
fn bad_input_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad_input");
    let mut paths = Vec::new();
    case_files(&root, &mut paths);
    paths.sort();
    let mut failures = Vec::new();
    for path in &paths {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let problems = match parse_case(&text).and_then(|c| run_case(&c).map(|o| (c, o))) {
            Ok((case, out)) => judge(&case, &out)
                .into_iter()
                .map(|p| format!("{p}\n    stderr: {}", tail(&out.stderr)))
                .collect(),
            Err(e) => vec![e],
        };
        failures.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
    }
    let peak = children_peak_rss_kib();
    println!(
        "{} bad-input cases, peak RSS {} MiB",
        paths.len(),
        peak / 1024
    );
    assert!(!paths.is_empty(), "no cases under {}", root.display());
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
    assert!(peak <= MAX_RSS_KIB, "a case peaked at {} MiB", peak / 1024);
}

fn tail(s: &str) -> &str {
    let start = s.len().saturating_sub(400);
    let start = (start..=s.len()).find(|&i| s.is_char_boundary(i)).unwrap();
    &s[start..]
}

#[test]
fn case_format_parses_header_and_files() {
    let case = parse_case(
        "# comment\nrun: validate pb.yml\nexit: 1\nstderr: pb.yml:1:1\n-- pb.yml --\n- a\n- b\n-- x/y.ini --\n[g]\n",
    )
    .unwrap();
    assert_eq!(case.run, "validate pb.yml");
    assert_eq!(case.exit, Some(1));
    assert_eq!(case.stderr, ["pb.yml:1:1"]);
    assert_eq!(
        case.files,
        [
            ("pb.yml".to_string(), "- a\n- b\n".to_string()),
            ("x/y.ini".to_string(), "[g]\n".to_string())
        ]
    );
    assert!(parse_case("exit: 1\n").is_err());
}
