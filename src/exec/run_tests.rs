//! The executor on a fake transport: the round-trip contract and check
//! mode's promise never to send a mutating script.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::prepared::testing::{self, load};
use super::result::Status;
use super::RunOptions;
use super::*;
use crate::load::inventory::Inventory;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{FileFact, FileState};
use crate::remote::fake::{count, FakeTransport};
use crate::remote::probe::{fake_answer, ProbeResult};
use crate::remote::{Output, Purpose, Script};

const CONTENT: &str = "managed\n";

/// A playbook of `n` copy tasks, the first `missing` of whose files are absent.
fn playbook(n: usize) -> (tempfile::TempDir, Playbook) {
    let tasks: Vec<String> = (0..n)
        .map(|i| format!("copy: {{dest: /etc/f{i}, content: \"managed\\n\"}}"))
        .collect();
    testing::tasks(&tasks.iter().map(String::as_str).collect::<Vec<_>>())
}

type Log = Arc<Mutex<Vec<Script>>>;

/// Runs the playbook against one fake host whose first `missing` files are
/// absent until a mutating script ran.
fn run(pb: &Playbook, missing: usize, check: bool) -> (RunOutcome, Log) {
    let log: Arc<Mutex<Option<Log>>> = Arc::new(Mutex::new(None));
    let log2 = log.clone();
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let fake = fake_host(missing);
        *log2.lock().unwrap() = Some(fake.log());
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    let outcome = execute(pb, check, 1, &connect);
    let log = log.lock().unwrap().clone().unwrap();
    (outcome, log)
}

/// Runs `pb` against the implicit localhost through `connect`; check mode
/// keeps diffs, as `nodeprov check` does.
pub(super) fn execute(pb: &Playbook, check: bool, forks: usize, connect: &Connector) -> RunOutcome {
    execute_with(pb, check, forks, connect, &|_| {})
}

fn execute_with(
    pb: &Playbook,
    check: bool,
    forks: usize,
    connect: &Connector,
    on_event: &(dyn Fn(Event) + Sync),
) -> RunOutcome {
    execute_on(pb, &Inventory::localhost(), check, forks, connect, on_event)
}

fn execute_on(
    pb: &Playbook,
    inventory: &Inventory,
    check: bool,
    forks: usize,
    connect: &Connector,
    on_event: &(dyn Fn(Event) + Sync),
) -> RunOutcome {
    let req = RunRequest {
        playbook: pb,
        inventory,
        shard: None,
        limit: None,
        opts: RunOptions {
            check,
            diff: check,
            tags: Vec::new(),
            skip_tags: Vec::new(),
            ansible_managed: None,
        },
        extra_vars: serde_json::Map::new(),
        forks,
        connect,
    };
    run_playbook(&req, on_event).unwrap()
}

/// A host whose first `missing` files are absent until a mutating script ran.
fn fake_host(missing: usize) -> FakeTransport {
    let applied = Arc::new(AtomicBool::new(false));
    FakeTransport::new(move |s: &Script| {
        if s.purpose == Purpose::Mutate {
            applied.store(true, Ordering::SeqCst);
        }
        let now_applied = applied.load(Ordering::SeqCst);
        let stdout = fake_answer(&s.body, |key| answer(key, missing, now_applied));
        Ok(Output {
            status: 0,
            stdout,
            stderr: Vec::new(),
        })
    })
}

/// A host that answers every probe and step by its key, with `answer`.
fn answering(mut answer: impl FnMut(&str) -> ProbeResult + Send + 'static) -> FakeTransport {
    FakeTransport::new(move |s: &Script| {
        Ok(Output {
            status: 0,
            stdout: fake_answer(&s.body, &mut answer),
            stderr: Vec::new(),
        })
    })
}

fn answer(key: &str, missing: usize, applied: bool) -> ProbeResult {
    let Some(index) = key.strip_prefix("file:/etc/f") else {
        return ProbeResult::ok(""); // an apply step: it succeeds
    };
    let index: usize = index.parse().unwrap();
    if index < missing && !applied {
        FileFact::render(&None)
    } else {
        FileFact::render(&Some(FileState::written(CONTENT, 0o644, "root", "root")))
    }
}

#[test]
fn noop_run_of_ten_tasks_is_one_probe() {
    let (_d, pb) = playbook(10);
    let (outcome, log) = run(&pb, 0, false);
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(count(&log, Purpose::Probe), 1);
    assert_eq!(outcome.reports[0].round_trips, 1);
    assert_eq!(outcome.reports[0].recap().ok, 10);
}

#[test]
fn three_changes_take_probe_apply_verify() {
    let (_d, pb) = playbook(10);
    let (outcome, log) = run(&pb, 3, false);
    let kinds: Vec<Purpose> = log.lock().unwrap().iter().map(|s| s.purpose).collect();
    assert_eq!(kinds, [Purpose::Probe, Purpose::Mutate, Purpose::Probe]);
    let recap = outcome.reports[0].recap();
    assert_eq!((recap.changed, recap.ok, recap.failed), (3, 7, 0));
}

#[test]
fn check_mode_never_sends_a_mutating_script() {
    let (_d, pb) = playbook(10);
    let (outcome, log) = run(&pb, 3, true);
    assert_eq!(count(&log, Purpose::Mutate), 0);
    assert_eq!(count(&log, Purpose::Probe), 1);
    assert_eq!(outcome.reports[0].recap().drift, 3);
    assert_eq!(crate::report::exit_code(&outcome, true), 2);
}

#[test]
fn round_trips_do_not_grow_with_task_count() {
    let (_d, pb) = playbook(40);
    let (outcome, _) = run(&pb, 20, false);
    assert_eq!(outcome.reports[0].round_trips, 3);
}

#[test]
fn unreachable_host_is_reported_not_fatal() {
    let (_d, pb) = playbook(2);
    let connect = |h: &str, _: &serde_json::Map<String, serde_json::Value>| {
        Err(crate::remote::TransportError::Unreachable(format!(
            "{h}: connection refused"
        )))
    };
    let outcome = execute(&pb, true, 4, &connect);
    let why = outcome.reports[0].unreachable.as_deref().unwrap();
    assert!(why.contains("connection refused"), "{why}");
    assert_eq!(crate::report::exit_code(&outcome, false), 4);
}

#[test]
fn one_session_per_host_for_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.yml");
    let play = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n";
    std::fs::write(&path, format!("{play}{play}")).unwrap();
    let pb = crate::load::playbook::load(&path).unwrap();
    let connects = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = connects.clone();
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        c2.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(fake_host(0)) as Box<dyn crate::remote::Transport>)
    };
    let outcome = execute(&pb, true, 2, &connect);
    assert_eq!(outcome.reports.len(), 2);
    assert_eq!(connects.load(Ordering::SeqCst), 1);
}

/// A fake host that counts how many of its connections were closed.
struct Counted(FakeTransport, Arc<std::sync::atomic::AtomicUsize>);

impl crate::remote::Transport for Counted {
    fn run(&mut self, script: &Script) -> Result<Output, crate::remote::TransportError> {
        self.0.run(script)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_connection_closes_when_no_later_play_needs_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.yml");
    let play = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n";
    std::fs::write(&path, format!("{play}{play}")).unwrap();
    let pb = crate::load::playbook::load(&path).unwrap();
    let closed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c2 = closed.clone();
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        Ok(Box::new(Counted(fake_host(0), c2.clone())) as Box<dyn crate::remote::Transport>)
    };
    // Closed connections when each play reported the host: the first play
    // keeps it for the second, which closes it before reporting.
    let seen = Mutex::new(Vec::new());
    execute_with(&pb, false, 1, &connect, &|e| {
        if let Event::Host(_) = e {
            seen.lock().unwrap().push(closed.load(Ordering::SeqCst));
        }
    });
    assert_eq!(*seen.lock().unwrap(), [0, 1]);
}

#[test]
fn diffs_stay_in_reports_only_when_asked_for() {
    let (_d, pb) = playbook(1);
    let diffs = |check: bool| {
        let (outcome, _) = run(&pb, 1, check);
        let change = &outcome.reports[0].tasks[0].changes[0];
        change.diff.is_some()
    };
    assert!(diffs(true), "check mode keeps the diff");
    assert!(!diffs(false), "apply without --diff drops it");
}

#[test]
fn changed_when_false_runs_the_step_but_reports_ok() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n      changed_when: false\n      notify: h\n  handlers:\n    - name: h\n      copy: {dest: /etc/f1, content: \"managed\\n\"}\n");
    let (outcome, log) = run(&pb, 2, false);
    let statuses: Vec<Status> = outcome.reports[0].tasks.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [Status::Ok],
        "not changed, so the handler is not notified"
    );
    assert_eq!(count(&log, Purpose::Mutate), 1, "the step still ran");
}

#[test]
fn upkeep_runs_its_step_in_apply_only_and_reports_ok() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - dnf: {update_cache: true}\n      register: r\n    - assert: {that: [not r.changed, \"r.msg == 'Cache updated'\"]}\n");
    for check in [false, true] {
        let log: Arc<Mutex<Option<Log>>> = Arc::new(Mutex::new(None));
        let log2 = log.clone();
        let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
            let fake = answering(|key| match key {
                "pkg:installed" => ProbeResult::ok("manager dnf\n"),
                _ => ProbeResult::ok(""),
            });
            *log2.lock().unwrap() = Some(fake.log());
            Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
        };
        let outcome = execute(&pb, check, 1, &connect);
        let statuses: Vec<Status> = outcome.reports[0].tasks.iter().map(|t| t.status).collect();
        assert_eq!(statuses, [Status::Ok, Status::Ok], "check: {check}");
        let log = log.lock().unwrap().clone().unwrap();
        assert_eq!(
            count(&log, Purpose::Mutate),
            usize::from(!check),
            "check: {check}"
        );
    }
}

#[test]
fn failed_when_on_a_module_fails_the_host_before_anything_runs() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n      failed_when: result.changed\n    - copy: {dest: /etc/f1, content: \"managed\\n\"}\n");
    let (outcome, log) = run(&pb, 2, false);
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(tasks.len(), 1, "the host stops at the failed task");
    assert_eq!(tasks[0].status, Status::Failed);
    assert_eq!(count(&log, Purpose::Mutate), 0);
    assert_eq!(crate::report::exit_code(&outcome, false), 4);
}

#[test]
fn when_false_is_reported_and_counted_as_skipped() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n      when: false\n    - copy: {dest: /etc/f1, content: \"managed\\n\"}\n      loop: [a, b]\n      when: item == 'b'\n");
    let (outcome, log) = run(&pb, 0, false);
    let report = &outcome.reports[0];
    let statuses: Vec<(Status, Option<&str>)> = report
        .tasks
        .iter()
        .map(|t| (t.status, t.id.item.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        [
            (Status::Skipped, None),
            (Status::Skipped, Some("a")),
            (Status::Ok, Some("b"))
        ]
    );
    let recap = report.recap();
    assert_eq!((recap.skipped, recap.ok), (2, 1));
    assert_eq!(count(&log, Purpose::Probe), 1);
    assert_eq!(crate::report::exit_code(&outcome, false), 0);
}

#[test]
fn a_templated_path_that_renders_to_the_root_is_never_removed() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars:\n    target: /tmp/..\n  tasks:\n    - file: {path: \"{{ target }}\", state: absent}\n");
    let (outcome, log) = run(&pb, 0, false);
    let task = &outcome.reports[0].tasks[0];
    assert_eq!(task.status, Status::Failed);
    let why = task.message.as_deref().unwrap();
    assert!(
        why.contains("refusing to remove or replace '/tmp/..'"),
        "{why}"
    );
    assert_eq!(count(&log, Purpose::Mutate), 0);
    assert!(log
        .lock()
        .unwrap()
        .iter()
        .all(|s| !s.body.contains("rm -rf")));
}

#[test]
fn rendered_values_that_would_inject_are_refused_before_anything_is_written() {
    let cases = [
        (
            "ini_file: {path: /etc/app.ini, section: main, option: workers, value: \"{{ v }}\"}",
            "ini_file: 'value' must be one line, but \"1\\n[evil]\\nx = 1\" holds a line break",
            "p.yml:7:77",
        ),
        (
            "copy: {dest: /etc/f0, content: x, owner: \"{{ who }}\"}",
            "copy: '--reference=/etc/shadow' is not a user or group name",
            "p.yml:7:48",
        ),
    ];
    for (task, want, at) in cases {
        let (_d, pb) = load(&format!("- hosts: all\n  gather_facts: false\n  vars:\n    v: \"1\\n[evil]\\nx = 1\"\n    who: --reference=/etc/shadow\n  tasks:\n    - {task}\n"));
        let (outcome, log) = run(&pb, 1, false);
        let result = &outcome.reports[0].tasks[0];
        assert_eq!(result.status, Status::Failed, "{task}");
        let message = result.message.as_deref().unwrap();
        assert_eq!(message.lines().next(), Some(want));
        assert!(message.contains(&format!("/{at}\n")), "{message}");
        assert_eq!(count(&log, Purpose::Mutate), 0, "{task}");
    }
}

#[test]
fn a_task_reading_a_self_referencing_variable_fails_with_its_position() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars:\n    a: \"{{ a }}\"\n    unused: \"{{ unused }}\"\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n    - copy: {dest: /etc/f1, content: \"{{ a }}\"}\n");
    let (outcome, log) = run(&pb, 0, false);
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(
        tasks[0].status,
        Status::Ok,
        "a broken variable it does not read"
    );
    assert_eq!(tasks[1].status, Status::Failed);
    let why = tasks[1].message.as_deref().unwrap();
    assert!(
        why.starts_with("variable 'a' (")
            && why.ends_with("p.yml:4:5) cannot be rendered: it refers to itself"),
        "{why}"
    );
    assert_eq!(count(&log, Purpose::Mutate), 0);
}

/// A host with `n` files missing that answers the apply script with `apply`,
/// given the full answer a healthy host would have sent.
fn faulty_host(
    n: usize,
    apply: fn(Vec<u8>) -> Result<Output, crate::remote::TransportError>,
) -> (Vec<Status>, HostReport) {
    let (_d, pb) = playbook(n);
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let mut healthy = fake_host(n);
        let fake = FakeTransport::new(move |s: &Script| {
            let out = crate::remote::Transport::run(&mut healthy, s)?;
            match s.purpose {
                Purpose::Mutate => apply(out.stdout),
                Purpose::Probe => Ok(out),
            }
        });
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    let outcome = execute(&pb, false, 1, &connect);
    let report = outcome.reports.into_iter().next().unwrap();
    (report.tasks.iter().map(|t| t.status).collect(), report)
}

/// The answer cut off inside the frame of the step with this index.
fn cut_inside_frame(out: &[u8], step: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(out);
    let at = text.match_indices("@@NP ").nth(step).unwrap().0;
    out[..at + 8].to_vec()
}

#[test]
fn a_host_lost_mid_apply_reports_finished_steps_changed_and_the_one_in_flight_unreachable() {
    let (statuses, report) = faulty_host(3, |out| {
        Err(crate::remote::TransportError::Interrupted {
            why: "gpu-01: no answer from the host".into(),
            stdout: cut_inside_frame(&out, 1),
        })
    });
    assert_eq!(statuses, [Status::Changed, Status::Unreachable]);
    let msg = report.tasks[1].message.as_deref().unwrap();
    assert!(
        msg.contains("may have taken effect") && msg.contains("no answer"),
        "{msg}"
    );
    assert!(report.unreachable.is_some());
    assert_eq!((report.recap().changed, report.recap().unreachable), (1, 1));
}

#[test]
fn a_failed_sudo_before_the_apply_script_started_changes_nothing() {
    let (statuses, report) = faulty_host(2, |_| {
        Err(crate::remote::TransportError::Become(
            "sudo to nosuchuser on gpu-01 failed: unknown user".into(),
        ))
    });
    assert_eq!(statuses, [Status::Failed]);
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(
        msg.starts_with("not run: privilege escalation failed"),
        "{msg}"
    );
    assert!(report.failed());
}

#[test]
fn an_apply_script_that_ended_without_reporting_fails_the_step_it_did_not_finish() {
    let (statuses, report) = faulty_host(2, |_| {
        Ok(Output {
            status: 90,
            stdout: Vec::new(),
            stderr: b"mktemp: No space left on device\n".to_vec(),
        })
    });
    assert_eq!(statuses, [Status::Failed]);
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(
        msg.contains("exit status 90: mktemp: No space left on device"),
        "{msg}"
    );
    assert!(report.failed(), "a full disk is not a success");
}

#[test]
fn steps_after_a_failed_step_are_not_reported() {
    let (statuses, report) = faulty_host(3, |out| {
        // The first step's frame, with exit status 1; the script stopped there.
        let text = String::from_utf8(cut_inside_frame(&out, 1)).unwrap();
        let first = &text[..text.rfind("@@NP ").unwrap()];
        let (header, rest) = first.split_once('\n').unwrap();
        let mut fields: Vec<&str> = header.split(' ').collect();
        fields[3] = "1";
        Ok(Output {
            status: 91,
            stdout: format!("{}\n{rest}", fields.join(" ")).into_bytes(),
            stderr: Vec::new(),
        })
    });
    assert_eq!(statuses, [Status::Failed]);
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(msg.starts_with("exit status 1"), "{msg}");
    assert!(report.unreachable.is_none());
}

#[test]
fn loop_items_render_with_task_variables_and_their_labels() {
    let (_d, pb) = load(
        "- hosts: all\n  gather_facts: false\n  vars:\n    dir: /etc\n  tasks:\n    - copy: {dest: \"{{ prefix }}{{ file.n }}\", content: \"managed\\n\"}\n      vars:\n        prefix: \"{{ dir }}/f\"\n      loop: [{n: 0}, {n: 1}]\n      loop_control: {loop_var: file, label: \"file {{ prefix }}{{ file.n }}\"}\n",
    );
    let (outcome, log) = run(&pb, 1, false);
    let report = &outcome.reports[0];
    let results: Vec<(Status, Option<&str>)> = report
        .tasks
        .iter()
        .map(|t| (t.status, t.id.item.as_deref()))
        .collect();
    assert_eq!(
        results,
        [
            (Status::Changed, Some("file /etc/f0")),
            (Status::Ok, Some("file /etc/f1")),
        ]
    );
    assert_eq!(report.tasks[0].changes[0].subject, "/etc/f0");
    assert_eq!(count(&log, Purpose::Mutate), 1);
}

/// A host whose apply scripts answer every step with the next of
/// `answers` (exit status, stdout), the last repeating; probes answer empty.
/// Scripts sent, each with its host's name.
type Sent = Arc<Mutex<Vec<(String, String)>>>;

/// A fake host for each name, answering every unit with `answer(host,
/// unit id)`, and the scripts they were sent, each with its host's name.
fn recording_hosts(
    answer: impl Fn(&str, &str) -> ProbeResult + Send + Sync + Clone + 'static,
) -> (Box<Connector>, Sent) {
    let sent: Sent = Arc::default();
    let sent2 = sent.clone();
    let connect = move |host: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let (host, sent, answer) = (host.to_string(), sent2.clone(), answer.clone());
        let fake = FakeTransport::new(move |s: &Script| {
            sent.lock().unwrap().push((host.clone(), s.body.clone()));
            let stdout = fake_answer(&s.body, |id| answer(&host, id));
            Ok(Output {
                status: 0,
                stdout,
                stderr: Vec::new(),
            })
        });
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    (Box::new(connect), sent)
}

fn scripted_host(answers: Vec<(i32, &'static str)>) -> (Box<Connector>, Arc<Mutex<Option<Log>>>) {
    let log: Arc<Mutex<Option<Log>>> = Arc::new(Mutex::new(None));
    let log2 = log.clone();
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let mut n = 0;
        let answers = answers.clone();
        let fake = FakeTransport::new(move |s: &Script| {
            let (rc, out) = match s.purpose {
                Purpose::Mutate => {
                    n += 1;
                    answers[(n - 1).min(answers.len() - 1)]
                }
                Purpose::Probe => (0, ""),
            };
            // A script stops at its first failed step.
            let body = match rc {
                0 => s.body.clone(),
                _ => first_unit(&s.body),
            };
            let stdout = fake_answer(&body, |_| ProbeResult {
                rc,
                stdout: out.to_string(),
                stderr: String::new(),
            });
            Ok(Output {
                status: 0,
                stdout,
                stderr: Vec::new(),
            })
        });
        *log2.lock().unwrap() = Some(fake.log());
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    (Box::new(connect), log)
}

/// A script cut after its first step.
fn first_unit(body: &str) -> String {
    let end = body.find("np_unit ").unwrap_or(body.len());
    let end = body[end..].find('\n').map_or(body.len(), |n| end + n);
    body[..end].to_string()
}

const RETRIED: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: ready?\n      register: r\n      until: r.stdout == 'ready'\n      retries: 4\n      delay: 0\n    - command: \"echo {{ r.attempts }} {{ r.rc }}\"\n";

#[test]
fn until_runs_a_command_again_until_its_condition_holds() {
    let (_d, pb) = load(RETRIED);
    let (connect, log) = scripted_host(vec![(1, "starting"), (0, "wait"), (0, "ready")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Changed, Status::Changed]);
    assert_eq!(report.tasks[0].notes, ["3 attempts"]);
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    // Each attempt is its own apply script; the next task reads the result.
    assert_eq!(scripts.len(), 4);
    assert!(scripts.iter().all(|s| s.purpose == Purpose::Mutate));
    assert!(scripts[3].body.contains("echo 3 0"), "{}", scripts[3].body);
}

#[test]
fn a_retried_query_runs_each_attempt_as_its_own_step() {
    let text = RETRIED.replace(
        "      delay: 0\n",
        "      delay: 0\n      changed_when: false\n",
    );
    let (_d, pb) = load(&text);
    let (connect, log) = scripted_host(vec![(1, "starting"), (0, "wait"), (0, "ready")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    assert_eq!(outcome.reports[0].tasks[0].notes, ["3 attempts"]);
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    assert_eq!(scripts.len(), 4);
    assert!(scripts.iter().all(|s| s.purpose == Purpose::Mutate));
}

const RETRIED_LOOP: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: \"ready? {{ item }}\"\n      register: r\n      until: r.stdout == 'ready'\n      retries: 2\n      delay: 0\n      loop: [a, b]\n    - command: \"echo {{ r.results | map(attribute='attempts') | join(',') }} {{ r.results[1].item }}\"\n";

#[test]
fn until_in_a_loop_retries_each_item_on_its_own_result() {
    let (_d, pb) = load(RETRIED_LOOP);
    let (connect, log) = scripted_host(vec![(0, "wait"), (0, "ready"), (0, "ready"), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Changed; 3], "one outcome per item");
    assert_eq!(report.tasks[0].notes, ["2 attempts"]);
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    assert_eq!(scripts.len(), 4);
    // `command` quotes the glob character: 'ready?' a.
    let runs = |i: usize, item: &str| scripts[i].body.contains(&format!("?'\\'' {item}"));
    assert!(
        runs(0, "a") && runs(1, "a") && runs(2, "b"),
        "{}",
        scripts[2].body
    );
    assert!(
        scripts[3].body.contains("echo 2,1 b"),
        "{}",
        scripts[3].body
    );
}

const BROKEN_LOOP: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: \"roll {{ item }}\"\n      register: r\n      loop: [a, b, c, d]\n      loop_control:\n        pause: 0.05\n        break_when: r.stdout == 'six'\n    - command: \"echo {{ r.results | map(attribute='break_when_result') | join(',') }}\"\n";

#[test]
fn break_when_ends_a_loop_at_the_item_it_holds_for() {
    let (_d, pb) = load(BROKEN_LOOP);
    let (connect, log) = scripted_host(vec![(0, "two"), (0, "six"), (0, "")]);
    let started = std::time::Instant::now();
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [Status::Changed; 3],
        "two items, then the next task"
    );
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    // Each item is its own apply script, the one after it sees the first.
    assert_eq!(scripts.len(), 3);
    assert!(
        scripts[2].body.contains("echo False,True"),
        "{}",
        scripts[2].body
    );
    // One pause, between the two items that ran.
    assert!(started.elapsed() >= std::time::Duration::from_millis(50));
}

#[test]
fn an_item_never_meeting_until_fails_the_task_after_the_other_items_ran() {
    let (_d, pb) = load(RETRIED_LOOP);
    let answers = vec![(1, "no"), (1, "no"), (1, "no"), (0, "ready"), (0, "")];
    let (connect, log) = scripted_host(answers);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [Status::Failed, Status::Changed],
        "one outcome per item"
    );
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(
        msg.starts_with("until: still false after 3 attempt(s)"),
        "{msg}"
    );
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    assert_eq!(scripts.len(), 4, "item b ran, the next task did not");
    assert!(scripts[3].body.contains("?'\\'' b"), "{}", scripts[3].body);
}

#[test]
fn templated_retries_and_delay_are_judged_per_host() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars: {n: '1', d: 0}\n  tasks:\n    - command: ready?\n      register: r\n      until: r.stdout == 'ready'\n      retries: '{{ n }}'\n      delay: '{{ d }}'\n");
    let (connect, log) = scripted_host(vec![(1, "no")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let msg = outcome.reports[0].tasks[0].message.as_deref().unwrap();
    assert!(
        msg.starts_with("until: still false after 2 attempt(s)"),
        "{msg}"
    );
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 2);

    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - command: ready?\n      register: r\n      until: r.rc == 0\n      delay: \"{{ 'soon' }}\"\n");
    let (connect, _log) = scripted_host(vec![(0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let task = &outcome.reports[0].tasks[0];
    assert_eq!(task.status, Status::Failed);
    let msg = task.message.as_deref().unwrap();
    assert!(
        msg.contains("delay: \"soon\" is not a whole number"),
        "{msg}"
    );
}

#[test]
fn until_still_false_after_every_attempt_fails_the_host() {
    let (_d, pb) = load(RETRIED);
    let (connect, log) = scripted_host(vec![(1, "no")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    assert_eq!(report.tasks.len(), 1, "the host stops at the failed task");
    assert_eq!(report.tasks[0].status, Status::Failed);
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(
        msg.starts_with("until: still false after 5 attempt(s); last: exit status 1"),
        "{msg}"
    );
    assert!(!report.tasks[0].ignored);
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 5);
}

#[test]
fn until_without_retries_tries_three_times_and_honours_ignore_errors() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - command: ready?\n      register: r\n      until: r.rc == 0\n      delay: 0\n      ignore_errors: true\n    - command: next\n");
    let (connect, log) = scripted_host(vec![(1, "no"), (1, "no"), (1, "no"), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Failed, Status::Changed]);
    assert!(report.tasks[0].ignored);
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 4);
}

#[test]
fn check_mode_skips_a_retried_command_unless_check_mode_is_false() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - command: ready?\n      register: r\n      until: r.rc == 0\n    - command: ready?\n      register: q\n      until: q.stdout == 'ready'\n      delay: 0\n      check_mode: false\n");
    let (connect, log) = scripted_host(vec![(0, "wait"), (0, "ready")]);
    let outcome = execute(&pb, true, 1, connect.as_ref());
    let report = &outcome.reports[0];
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Skipped, Status::Changed]);
    let msg = report.tasks[0].message.as_deref().unwrap();
    assert!(msg.contains("only in apply mode"), "{msg}");
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 2);
}

#[test]
fn a_templated_check_mode_is_judged_per_host() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars: {real: false}\n  tasks:\n    - command: a\n      check_mode: \"{{ real | d(ansible_check_mode) }}\"\n    - command: b\n      check_mode: \"{{ undefined_here }}\"\n");
    let (connect, log) = scripted_host(vec![(0, "")]);
    let outcome = execute(&pb, true, 1, connect.as_ref());
    let statuses: Vec<Status> = outcome.reports[0].tasks.iter().map(|t| t.status).collect();
    // `real` is false: the first runs for real; the second cannot be judged
    // and stays in check mode, which changes nothing.
    assert_eq!(statuses, [Status::Changed, Status::Unknown]);
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 1);
}

#[test]
fn a_templated_async_bounds_the_steps_and_a_templated_poll_of_0_fails_the_task() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars: {wait: 600, every: 15, never: 0}\n  tasks:\n    - command: a\n      async: \"{{ wait }}\"\n      poll: \"{{ every }}\"\n    - command: b\n      async: 60\n      poll: \"{{ never }}\"\n");
    let (connect, log) = scripted_host(vec![(0, ""), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(tasks[0].status, Status::Changed);
    assert_eq!(tasks[1].status, Status::Failed);
    let msg = tasks[1].message.as_deref().unwrap_or_default();
    assert!(msg.contains("fire-and-forget"), "{msg}");
    let scripts = log.lock().unwrap().clone().unwrap();
    let scripts = scripts.lock().unwrap();
    let mutate = scripts.iter().find(|s| s.purpose == Purpose::Mutate);
    assert!(mutate.is_some_and(|s| s.body.contains("timeout -k 5 600 /bin/sh")));
}

/// Statuses and notes of one host's tasks, by name.
fn results(report: &HostReport) -> Vec<(String, Status, bool)> {
    report
        .tasks
        .iter()
        .map(|t| (t.id.task.clone(), t.status, t.ignored))
        .collect()
}

fn names_statuses(want: &[(&str, Status, bool)]) -> Vec<(String, Status, bool)> {
    want.iter()
        .map(|(n, s, i)| (n.to_string(), *s, *i))
        .collect()
}

const BLOCK: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - block:\n        - {name: a, command: a}\n        - {name: b, command: b}\n      rescue:\n        - {name: r, command: \"echo {{ ansible_failed_task.name }} {{ ansible_failed_result.rc }}\"}\n      always:\n        - {name: c, command: c}\n    - {name: d, command: d}\n";

#[test]
fn a_rescued_block_failure_leaves_the_host_ok_and_always_runs() {
    let (_d, pb) = load(BLOCK);
    let (connect, log) = scripted_host(vec![(3, "boom"), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    use Status::*;
    let want = [
        ("a", Failed, true),
        ("r", Changed, false),
        ("c", Changed, false),
        ("d", Changed, false),
    ];
    assert_eq!(results(report), names_statuses(&want));
    assert_eq!(report.tasks[0].notes, ["rescued"]);
    assert!(!report.failed());
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    // Body, rescue, always and what follows: one apply script per section.
    assert_eq!(scripts.len(), 4);
    assert!(scripts[1].body.contains("echo a 3"), "{}", scripts[1].body);
}

#[test]
fn a_block_without_failure_skips_its_rescue() {
    let (_d, pb) = load(BLOCK);
    let (connect, _log) = scripted_host(vec![(0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let names: Vec<String> = outcome.reports[0]
        .tasks
        .iter()
        .map(|t| t.id.task.clone())
        .collect();
    assert_eq!(names, ["a", "b", "c", "d"]);
}

#[test]
fn always_runs_after_an_unrescued_failure_which_then_stops_the_host() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - block:\n        - block:\n            - {name: a, command: a}\n          always:\n            - {name: inner, command: i}\n        - {name: b, command: b}\n      always:\n        - {name: c, command: c}\n    - {name: d, command: d}\n");
    let (connect, _log) = scripted_host(vec![(1, "boom"), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    use Status::*;
    let want = [
        ("a", Failed, false),
        ("inner", Changed, false),
        ("c", Changed, false),
    ];
    assert_eq!(results(report), names_statuses(&want));
    assert!(report.failed());
}

#[test]
fn a_failure_in_rescue_runs_always_and_fails_the_host() {
    let (_d, pb) = load(BLOCK);
    let (connect, _log) = scripted_host(vec![(1, "boom"), (2, "again"), (0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    use Status::*;
    let want = [
        ("a", Failed, false),
        ("r", Failed, false),
        ("c", Changed, false),
    ];
    assert_eq!(results(report), names_statuses(&want));
    assert!(report.failed());
}

/// A package task with defaults for dnf's and apt's modules, on a host
/// whose `ansible_pkg_mgr` is `manager` (none: unknown), answering its
/// package probe with `installed`; the scripts sent and the task's report.
fn package_with_backend_defaults(
    manager: Option<&str>,
    installed: &'static str,
) -> (Vec<String>, super::result::TaskResult) {
    let vars = manager.map_or(String::new(), |m| {
        format!("  vars: {{ansible_pkg_mgr: {m}}}\n")
    });
    let (_d, pb) = load(&format!("- hosts: all\n  gather_facts: false\n{vars}  module_defaults:\n    ansible.builtin.dnf: {{enablerepo: epel}}\n    apt: {{update_cache: true}}\n  tasks:\n    - package: {{name: htop}}\n"));
    let (connect, sent) = recording_hosts(move |_, key| match key.starts_with("pkg:installed") {
        true => ProbeResult::ok(installed),
        false => ProbeResult::ok(""),
    });
    let mut outcome = execute(&pb, false, 1, connect.as_ref());
    let task = outcome.reports.remove(0).tasks.remove(0);
    let sent = sent
        .lock()
        .unwrap()
        .iter()
        .map(|(_, body)| body.clone())
        .collect();
    (sent, task)
}

#[test]
fn a_package_task_takes_the_module_defaults_of_its_hosts_package_manager() {
    // The fake host never has the package, so the run fails its verify:
    // what matters here is the install step it was sent.
    let install = |sent: &[String]| {
        let step = sent.iter().find(|s| s.contains("install -- htop"));
        step.cloned()
            .unwrap_or_else(|| panic!("no install step: {sent:?}"))
    };
    let (sent, _) = package_with_backend_defaults(Some("dnf"), "manager dnf\ni tmux 3.2\n");
    let script = install(&sent);
    assert!(
        script.contains("--enablerepo=epel install -- htop"),
        "{script}"
    );
    assert!(!script.contains("apt-get"), "{script}");

    let deb = "manager apt\ncache 7200 2\ni curl 7.88.1-10\n";
    let (sent, _) = package_with_backend_defaults(Some("apt"), deb);
    let script = install(&sent);
    assert!(script.contains("apt-get update"), "{script}");
    assert!(!script.contains("enablerepo"), "{script}");

    let (_, task) = package_with_backend_defaults(None, deb);
    assert_eq!(task.status, Status::Failed);
    let msg = task.message.unwrap();
    assert!(
        msg.contains("this host's is unknown: gather facts"),
        "{msg}"
    );
}

#[test]
fn a_loop_over_an_include_takes_each_hosts_own_list_and_never_runs_fewer_items() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap()
    };
    write("roles/r/defaults/main.yml", "users: [a, b]\n");
    write(
        "roles/r/tasks/user.yml",
        "- command: \"make {{ u }} {{ n }}\"\n",
    );
    write("roles/r/tasks/main.yml", "- include_tasks: user.yml\n  loop: \"{{ users }}\"\n  loop_control: {loop_var: u, index_var: n}\n");
    write(
        "p.yml",
        "- hosts: all\n  gather_facts: false\n  roles: [r]\n",
    );
    // h2 has one user fewer than the role's defaults say, h3 one more.
    write(
        "inv.yml",
        "all:\n  hosts:\n    h1: {}\n    h2: {users: [c]}\n    h3: {users: [a, b, z]}\n",
    );
    let pb = crate::load::playbook::load(&dir.path().join("p.yml")).unwrap();
    let inventory = Inventory::load(&dir.path().join("inv.yml")).unwrap();
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok(""));
    let outcome = execute_on(&pb, &inventory, false, 3, connect.as_ref(), &|_| {});
    let sent = sent.lock().unwrap();
    let made = |host: &str| -> Vec<String> {
        let bodies = sent
            .iter()
            .filter(|(h, _)| h == host)
            .map(|(_, b)| b.as_str());
        let lines = bodies.flat_map(|b| b.lines().map(str::trim).collect::<Vec<_>>());
        let mut made: Vec<String> = lines
            .filter_map(|l| l.strip_prefix("make "))
            .map(str::to_string)
            .collect();
        made.dedup();
        made
    };
    assert_eq!(made("h1"), ["a 0", "b 1"]);
    assert_eq!(made("h2"), ["c 0"]);
    assert_eq!(made("h3"), ["a 0", "b 1"]);
    let report = |host: &str| outcome.reports.iter().find(|r| r.host == host).unwrap();
    assert!(report("h1")
        .tasks
        .iter()
        .all(|t| t.status != Status::Failed));
    let failed: Vec<_> = report("h3")
        .tasks
        .iter()
        .filter(|t| t.status == Status::Failed)
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "the host with more items than expanded fails"
    );
    let msg = failed[0].message.as_deref().unwrap();
    assert!(
        msg.contains("has 3 items on this host; nodeprov expanded it for 2"),
        "{msg}"
    );
}

#[test]
fn of_two_handlers_with_one_name_the_last_loaded_is_the_one_notified() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {command: change, notify: restart}\n  handlers:\n    - {name: restart, command: restart-first, listen: topic}\n    - {name: restart, command: restart-last}\n");
    let (connect, log) = scripted_host(vec![(0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let names: Vec<&str> = outcome.reports[0]
        .tasks
        .iter()
        .map(|t| t.id.task.as_str())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    assert!(scripts.iter().any(|s| s.body.contains("restart-last")));
    assert!(!scripts.iter().any(|s| s.body.contains("restart-first")));
}

#[test]
fn meta_flush_handlers_runs_them_there_and_end_host_ends_without_failing() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: a, command: a, notify: h}\n    - meta: flush_handlers\n    - {name: b, command: b}\n    - meta: noop\n    - {name: end, meta: end_host, when: true}\n    - {name: never, command: c}\n  handlers:\n    - {name: h, command: h}\n");
    let (connect, log) = scripted_host(vec![(0, "")]);
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let report = &outcome.reports[0];
    use Status::*;
    let want = [
        ("a", Changed, false),
        ("h", Changed, false),
        ("meta", Ok, false),
        ("b", Changed, false),
        ("meta", Ok, false),
        ("end", Ok, false),
    ];
    assert_eq!(results(report), names_statuses(&want));
    assert!(!report.failed());
    let log = log.lock().unwrap().clone().unwrap();
    let scripts = log.lock().unwrap();
    // The handler ran before b, and did not run again at the end.
    assert_eq!(scripts.len(), 3, "a, then h, then b");
    assert!(scripts[1].body.contains("h") && !scripts[2].body.contains("'h'"));
}

#[test]
fn a_delegated_task_is_probed_and_applied_on_its_delegate_with_the_host_s_vars() {
    let (_d, pb) = load("- hosts: nodes\n  gather_facts: false\n  tasks:\n    - {name: a, command: a}\n    - name: fetch\n      shell: echo key-for-{{ inventory_hostname }}\n      register: r\n      changed_when: false\n      delegate_to: '{{ control }}'\n    - {name: c, command: \"echo {{ r.stdout }}\"}\n    - {name: d, copy: {dest: /etc/k, content: x}, delegate_to: ctl}\n");
    let ini = _d.path().join("hosts.ini");
    std::fs::write(&ini, "ctl\n[nodes]\nn1 control=ctl\n").unwrap();
    let inventory = Inventory::load(&ini).unwrap();
    let (connect, sent) = recording_hosts(|host, _| ProbeResult::ok(format!("from-{host}")));
    let outcome = execute_on(&pb, &inventory, false, 1, connect.as_ref(), &|_| {});
    let report = &outcome.reports[0];
    assert_eq!(report.host, "n1");
    let sent = sent.lock().unwrap();
    let on = |host: &str| -> Vec<&str> {
        sent.iter()
            .filter(|(h, _)| h == host)
            .map(|(_, b)| b.as_str())
            .collect()
    };
    // The delegate ran the command rendered with n1's variables, and the
    // copy's probe and step; n1 itself saw neither.
    let ctl = on("ctl");
    assert!(ctl.iter().any(|b| b.contains("echo key-for-n1")), "{ctl:?}");
    assert!(ctl.iter().any(|b| b.contains("/etc/k")), "{ctl:?}");
    let n1 = on("n1");
    assert!(
        n1.iter()
            .all(|b| !b.contains("key-for") && !b.contains("/etc/k")),
        "{n1:?}"
    );
    // What the delegate said is registered for this host's next task.
    assert!(n1.iter().any(|b| b.contains("echo from-ctl")), "{n1:?}");
}

#[test]
fn a_run_once_task_runs_on_the_first_host_and_every_host_gets_its_result() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: token, command: make-token, register: t, run_once: true}\n    - {name: use, command: \"join {{ t.stdout }}\"}\n");
    let inventory = Inventory::from_host_list("h1,h2,h3");
    let (connect, sent) = recording_hosts(move |host, _| ProbeResult::ok(format!("tok-{host}")));
    let outcome = execute_on(&pb, &inventory, false, 3, connect.as_ref(), &|_| {});
    let sent = sent.lock().unwrap();
    let made: Vec<&str> = sent
        .iter()
        .filter(|(_, body)| body.contains("make-token"))
        .map(|(h, _)| h.as_str())
        .collect();
    assert_eq!(made, ["h1"]);
    for host in ["h1", "h2", "h3"] {
        assert!(
            sent.iter()
                .any(|(h, b)| h == host && b.contains("join tok-h1")),
            "{host} did not get h1's result"
        );
    }
    let h2 = outcome.reports.iter().find(|r| r.host == "h2").unwrap();
    assert_eq!(h2.tasks[0].notes, ["ran once, on h1"]);
}

#[test]
fn a_run_once_task_passes_to_the_next_host_when_the_first_is_unreachable() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: token, command: make-token, register: t, run_once: true}\n");
    let inventory = Inventory::from_host_list("h1,h2,h3");
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let runs2 = runs.clone();
    let connect = move |host: &str, _: &serde_json::Map<String, serde_json::Value>| {
        if host == "h1" {
            return Err(crate::remote::TransportError::Unreachable(
                "h1: no route".into(),
            ));
        }
        let runs = runs2.clone();
        let fake = FakeTransport::new(move |s: &Script| {
            if s.body.contains("make-token") {
                runs.fetch_add(1, Ordering::SeqCst);
            }
            let stdout = fake_answer(&s.body, |_| ProbeResult::ok(""));
            Ok(Output {
                status: 0,
                stdout,
                stderr: Vec::new(),
            })
        });
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    let outcome = execute_on(&pb, &inventory, false, 1, &connect, &|_| {});
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let h3 = outcome.reports.iter().find(|r| r.host == "h3").unwrap();
    assert_eq!(h3.tasks[0].notes, ["ran once, on h2"]);
}

#[test]
fn a_looped_command_registers_every_items_result_with_its_item() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - command: \"show {{ item }}\"\n      register: r\n      loop: [a, b]\n    - command: \"echo {{ r.results | map(attribute='stdout') | join('+') }} {{ r.results[1].item }} {{ r.changed }}\"\n");
    let (connect, sent) = recording_hosts(|_, id| ProbeResult::ok(format!("o{id}")));
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let statuses: Vec<Status> = outcome.reports[0].tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Changed; 3]);
    let sent = sent.lock().unwrap();
    let last = &sent.last().unwrap().1;
    let echoed = last
        .lines()
        .find_map(|l| l.trim().strip_prefix("echo "))
        .unwrap();
    let words: Vec<&str> = echoed.split(' ').collect();
    let outputs: Vec<&str> = words[0].split('+').collect();
    assert_eq!(outputs.len(), 2, "{echoed}");
    assert_ne!(outputs[0], outputs[1], "each item's own result: {echoed}");
    assert_eq!(words[1..], ["b", "True"], "{echoed}");
}

#[test]
fn a_looped_run_once_task_runs_every_item_on_the_first_host_only() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: token, command: \"make-token {{ item }}\", register: t, run_once: true, loop: [a, b]}\n    - {name: use, command: \"join {{ t.results | map(attribute='item') | join('+') }}\"}\n");
    let inventory = Inventory::from_host_list("h1,h2");
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok(""));
    let outcome = execute_on(&pb, &inventory, false, 2, connect.as_ref(), &|_| {});
    let sent = sent.lock().unwrap();
    let made = |item: &str| -> Vec<&str> {
        let line = format!("make-token {item}");
        sent.iter()
            .filter(|(_, body)| body.contains(&line))
            .map(|(h, _)| h.as_str())
            .collect()
    };
    assert_eq!((made("a"), made("b")), (vec!["h1"], vec!["h1"]));
    for host in ["h1", "h2"] {
        assert!(
            sent.iter()
                .any(|(h, b)| h == host && b.contains("join a+b")),
            "{host} did not get h1's results: {sent:?}"
        );
    }
    let h2 = outcome.reports.iter().find(|r| r.host == "h2").unwrap();
    assert_eq!(h2.tasks[0].notes, ["ran once, on h1"]);
}

#[test]
fn a_run_once_task_skipped_on_the_first_host_is_skipped_on_all() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: token, command: make-token, run_once: true, when: \"inventory_hostname == 'h2'\"}\n");
    let inventory = Inventory::from_host_list("h1,h2");
    let (connect, log) = scripted_host(vec![(0, "")]);
    let outcome = execute_on(&pb, &inventory, false, 2, connect.as_ref(), &|_| {});
    for r in &outcome.reports {
        assert_eq!(r.tasks[0].status, Status::Skipped, "{}", r.host);
    }
    let log = log.lock().unwrap().clone().unwrap();
    assert_eq!(count(&log, Purpose::Mutate), 0);
}

/// A copy, then an extraction into a folder the host lacks.
const EXTRACT_AFTER_COPY: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n    - unarchive: {src: /tmp/a.tgz, dest: /srv, remote_src: true}\n      register: x\n    - debug: {msg: \"{{ x }}\"}\n";

fn extract_after_copy(copy_missing: bool) -> HostReport {
    let (_d, pb) = load(EXTRACT_AFTER_COPY);
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let fake = answering(move |key| match key.starts_with("unarchive:") {
            true => ProbeResult::ok("nodest\n"),
            false => answer(key, usize::from(copy_missing), false),
        });
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    execute(&pb, true, 1, &connect).reports.remove(0)
}

#[test]
fn check_mode_calls_a_missing_folder_after_an_earlier_drift_unknown_not_failed() {
    let report = extract_after_copy(true);
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Drift, Status::Unknown, Status::Unknown]);
    let msg = report.tasks[1].message.as_deref().unwrap();
    assert!(
        msg.contains("/srv does not exist; an earlier task would change"),
        "{msg}"
    );
    // With nothing drifting before it, nothing can make the folder: it
    // fails (and check mode goes on, as it does after any failure).
    let report = extract_after_copy(false);
    let statuses: Vec<Status> = report.tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Ok, Status::Failed, Status::Ok]);
}

#[test]
fn arguments_given_as_one_template_render_per_item_under_the_written_ones() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: \"{{ item }}\"\n      args: {mode: '0600'}\n      loop:\n        - {dest: /etc/one, content: a, mode: '0644'}\n        - {dest: /etc/two, content: b}\n    - copy: '{{ 5 }}'\n");
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok("absent".to_string()));
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let tasks = &outcome.reports[0].tasks;
    let sent = sent.lock().unwrap();
    let bodies: String = sent.iter().map(|(_, b)| b.as_str()).collect();
    assert!(bodies.contains("/etc/one") && bodies.contains("/etc/two"));
    assert!(!bodies.contains("0644"), "the written mode wins");
    let last = tasks.last().unwrap();
    assert_eq!(last.status, Status::Failed);
    assert!(
        last.message
            .as_deref()
            .is_some_and(|m| m.ends_with("the task's arguments must render to a mapping, got 5")),
        "{:?}",
        last.message
    );
}

#[test]
fn a_templated_become_is_judged_per_host() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  become: true\n  vars: {escalate: false}\n  tasks:\n    - {name: plain, command: whoami-a}\n    - {name: judged, command: whoami-b, become: '{{ escalate }}'}\n    - {name: judged-true, command: whoami-c, become: '{{ not escalate }}'}\n");
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok(String::new()));
    execute(&pb, false, 1, connect.as_ref());
    let sent = sent.lock().unwrap();
    let body: String = sent.iter().map(|(_, b)| b.as_str()).collect();
    let step = |cmd: &str| {
        let at = body
            .find(cmd)
            .unwrap_or_else(|| panic!("{cmd} not sent: {body}"));
        body[..at].rsplit("np_unit").next().unwrap().to_string()
    };
    // Only the task whose become is false here drops to the login user.
    assert!(
        step("whoami-b").contains("SUDO_USER"),
        "{}",
        step("whoami-b")
    );
    assert!(!step("whoami-a").contains("SUDO_USER"));
    assert!(!step("whoami-c").contains("SUDO_USER"));
}

#[test]
fn a_templated_notify_is_rendered_per_host_and_must_name_a_handler() {
    let handlers = "  handlers:\n    - {name: start it, command: started-handler}\n    - {name: stop it, command: stopped-handler}\n";
    let play = |task: &str| {
        format!("- hosts: all\n  gather_facts: false\n  vars: {{up: true}}\n  tasks:\n    - {task}\n{handlers}")
    };
    let (_d, pb) = load(&play(
        "{name: a, command: a, notify: \"{{ 'start it' if up else 'stop it' }}\"}",
    ));
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok(String::new()));
    execute(&pb, false, 1, connect.as_ref());
    let body: String = sent
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b.clone())
        .collect();
    assert!(body.contains("started-handler") && !body.contains("stopped-handler"));
    let (_d, pb) = load(&play("{name: b, command: b, notify: \"{{ 'no such' }}\"}"));
    let outcome = execute(&pb, false, 1, connect.as_ref());
    let failed: Vec<&str> = outcome.reports[0]
        .tasks
        .iter()
        .filter(|t| t.status == Status::Failed)
        .filter_map(|t| t.message.as_deref())
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(
        failed[0].ends_with("notify: no handler named 'no such' in this play"),
        "{failed:?}"
    );
}

#[test]
fn a_templated_become_method_runs_where_it_is_sudo_and_fails_elsewhere() {
    let play = |method: &str| {
        format!("- hosts: all\n  gather_facts: false\n  vars: {{how: {method}}}\n  tasks:\n    - {{name: t, command: whoami-x, become: true, become_method: '{{{{ how }}}}'}}\n")
    };
    let (connect, sent) = recording_hosts(|_, _| ProbeResult::ok(String::new()));
    let (_d, pb) = load(&play("sudo"));
    let ran = execute(&pb, false, 1, connect.as_ref());
    assert_eq!(ran.reports[0].tasks[0].status, Status::Changed);
    let (_d, pb) = load(&play("su"));
    let refused = execute(&pb, false, 1, connect.as_ref());
    let t = &refused.reports[0].tasks[0];
    assert_eq!(t.status, Status::Failed);
    assert!(
        t.message
            .as_deref()
            .is_some_and(|m| m.ends_with("become_method 'su' is not supported: only sudo is")),
        "{:?}",
        t.message
    );
    let sent = sent.lock().unwrap();
    assert_eq!(
        sent.iter().filter(|(_, b)| b.contains("whoami-x")).count(),
        1
    );
}

/// Each task item's module is built once in a play of several batches
/// (commands cut them), shared by the probes ahead of every batch and the
/// planning; only a change of a variable its parameters read builds it
/// again.
#[test]
fn a_task_item_is_built_once_unless_what_it_reads_changed() {
    let (_d, pb) = load(
        "- hosts: all\n  gather_facts: false\n  tasks:\n\
         \x20   - {name: once-cmd, command: echo one, register: r}\n\
         \x20   - name: once-loop\n      copy: {dest: \"/etc/f{{ item }}\", content: \"managed\\n\"}\n      loop: [1, 2, 3]\n\
         \x20   - {name: once-cmd2, command: echo two}\n\
         \x20   - {name: once-set, set_fact: {suffix: \"{{ r.rc }}\"}}\n\
         \x20   - {name: once-reads, copy: {dest: \"/etc/f9{{ suffix }}\", content: \"managed\\n\"}}\n\
         \x20   - {name: once-last, copy: {dest: /etc/f5, content: \"managed\\n\"}}\n",
    );
    let (outcome, log) = run(&pb, 10, false);
    assert!(outcome.reports[0].unreachable.is_none());
    assert!(log.lock().unwrap().len() > 3, "several batches");
    let builds = super::built::BUILDS.lock().unwrap().clone();
    let count = |name: &str| builds.iter().filter(|b| *b == name).count();
    assert_eq!(count("once-cmd"), 1);
    assert_eq!(count("once-loop"), 3, "one per item");
    assert_eq!(count("once-cmd2"), 1);
    assert_eq!(count("once-last"), 1);
    // Not buildable before `r` is registered, then built once.
    assert_eq!(count("once-set"), 1);
    // Guessed with `suffix` unknown (rendered empty), then built with it.
    assert_eq!(count("once-reads"), 2, "suffix changed from unknown to '0'");
    // The file planned is the one named with the registered value.
    let scripts = log.lock().unwrap();
    assert!(scripts.iter().any(|s| s.body.contains("/etc/f90")));
}

#[test]
fn arguments_only_a_host_renders_are_read_by_their_declared_names() {
    let (_d, pb) = load(
        "- hosts: all\n  gather_facts: false\n  vars:\n    aliased: {dest: /etc/f0, line: managed}\n    unknown: {path: /etc/f1, line: managed, frob: 1}\n  tasks:\n    - lineinfile: \"{{ aliased }}\"\n    - lineinfile: \"{{ unknown }}\"\n",
    );
    let (outcome, _) = run(&pb, 0, true);
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(tasks[0].status, Status::Ok, "{:?}", tasks[0].message);
    assert_eq!(tasks[1].status, Status::Failed);
    let message = format!("{:?}", tasks[1].message);
    assert!(
        message.contains("give 'frob', which 'lineinfile' does not take"),
        "{message}"
    );
}

#[test]
fn a_task_that_fails_to_render_is_rendered_again_after_the_pending_steps_ran() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /etc/f0, content: \"managed\\n\"}\n    - debug: {msg: \"{{ nowhere }}\"}\n      ignore_errors: true\n    - copy: {dest: /etc/f1, content: \"managed\\n\"}\n");
    let (outcome, log) = run(&pb, 2, false);
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(tasks[1].status, Status::Failed, "{tasks:?}");
    let kinds: Vec<Purpose> = log.lock().unwrap().iter().map(|s| s.purpose).collect();
    assert_eq!(
        count(&log, Purpose::Mutate),
        2,
        "the first copy ran before the failing task was rendered again: {kinds:?}"
    );
}

/// A module refusing parameters known only on the host fails its task
/// then; the report shows where, the registered `msg` is the module's words.
#[test]
fn a_module_refusing_rendered_parameters_registers_its_own_words() {
    let (_d, pb) = load("- hosts: all\n  gather_facts: false\n  vars: {re: '('}\n  tasks:\n    - lineinfile: {path: /etc/f0, regexp: \"{{ re }}\", line: x}\n      register: r\n      ignore_errors: true\n    - assert: {that: \"r.msg.startswith('invalid regular expression')\"}\n");
    let (outcome, _) = run(&pb, 0, true);
    let tasks = &outcome.reports[0].tasks;
    assert_eq!(tasks[0].status, Status::Failed, "{tasks:?}");
    let shown = tasks[0].message.as_deref().unwrap_or_default();
    assert!(
        shown.contains("lineinfile: invalid regular expression"),
        "{shown}"
    );
    assert_eq!(tasks[1].status, Status::Ok, "{tasks:?}");
}
