//! Reboot and wait_for_connection on a fake host that goes down and comes
//! back with a new boot id: the session is replaced, the play goes on with
//! a fresh probe, and check mode reboots nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::prepared::testing::load;
use super::result::Status;
use super::*;
use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{FileFact, FileState};
use crate::remote::probe::{fake_answer, ProbeResult};
use crate::remote::{Output, Purpose, Script, Transport, TransportError};

/// What the fake host saw: every script, and each login after the first.
#[derive(Default)]
struct Seen {
    scripts: Vec<Script>,
    logins: usize,
}

/// A host that reboots when asked to (`shutdown -r` in a script): its
/// session dies, the next `down` logins fail, then it answers with the
/// next boot id. Framed scripts get empty answers, and every file holds
/// `x`.
struct RebootingHost {
    seen: Arc<Mutex<Seen>>,
    boot: u32,
    rebooting: bool,
    down: usize,
    reconnects: bool,
}

impl Transport for RebootingHost {
    fn run(&mut self, script: &Script) -> Result<Output, TransportError> {
        self.seen.lock().unwrap().scripts.push(script.clone());
        if self.rebooting {
            return Err(TransportError::Unreachable("connection reset".into()));
        }
        let body = &script.body;
        let stdout = if body.starts_with("np_tok=") {
            fake_answer(body, |key| match key.starts_with("file:") {
                true => FileFact::render(&Some(FileState::written("x", 0o644, "root", "root"))),
                false => ProbeResult::ok(String::new()),
            })
        } else if body.starts_with("cat /proc/sys/kernel/random/boot_id") {
            format!("boot-{}\n", self.boot).into_bytes()
        } else {
            b"root\n".to_vec()
        };
        self.rebooting = body.contains("shutdown -r now");
        Ok(Output {
            status: 0,
            stdout,
            stderr: Vec::new(),
        })
    }

    fn can_reconnect(&self) -> bool {
        self.reconnects
    }

    fn reconnect(&mut self, _: Option<Duration>) -> Result<(), TransportError> {
        self.seen.lock().unwrap().logins += 1;
        if self.rebooting && self.down > 0 {
            self.down -= 1;
            return Err(TransportError::Unreachable("connection refused".into()));
        }
        if std::mem::take(&mut self.rebooting) {
            self.boot += 1;
        }
        Ok(())
    }
}

fn run(text: &str, check: bool, down: usize, reconnects: bool) -> (RunOutcome, Arc<Mutex<Seen>>) {
    let (_dir, pb) = load(text);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    let connect = move |_: &str, _: &serde_json::Map<String, serde_json::Value>| {
        let host = RebootingHost {
            seen: seen2.clone(),
            boot: 1,
            rebooting: false,
            down,
            reconnects,
        };
        Ok(Box::new(host) as Box<dyn Transport>)
    };
    (super::run_tests::execute(&pb, check, 1, &connect), seen)
}

const PLAY: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: echo before\n    - reboot: {reboot_timeout: 60, test_command: whoami}\n      register: r\n    - command: \"echo after-{{ r.rebooted }}\"\n    - copy: {dest: /etc/probed, content: x}\n";

fn statuses(outcome: &RunOutcome) -> Vec<Status> {
    outcome.reports[0].tasks.iter().map(|t| t.status).collect()
}

#[test]
fn a_reboot_waits_for_a_new_boot_and_what_follows_is_probed_after_it() {
    let (outcome, seen) = run(PLAY, false, 1, true);
    let report = &outcome.reports[0];
    assert_eq!(report.unreachable, None);
    assert_eq!(
        statuses(&outcome),
        [
            Status::Changed,
            Status::Changed,
            Status::Changed,
            Status::Ok
        ]
    );
    assert!(report.tasks[1].notes[0].starts_with("rebooted; back after "));
    let seen = seen.lock().unwrap();
    // One failed login while the host was down, then the one that worked.
    assert_eq!(seen.logins, 2);
    let bodies: Vec<&str> = seen.scripts.iter().map(|s| s.body.as_str()).collect();
    let reboot = bodies
        .iter()
        .position(|b| b.contains("shutdown -r now"))
        .unwrap();
    // What was pending ran before the host went down.
    assert!(bodies[..reboot].iter().any(|b| b.contains("echo before")));
    assert!(!bodies[..reboot].iter().any(|b| b.contains("echo after")));
    assert_eq!(seen.scripts[reboot].purpose, Purpose::Mutate);
    // Back: the new boot id and the test command, then the play goes on.
    assert_eq!(bodies[reboot + 1], "cat /proc/sys/kernel/random/boot_id");
    assert_eq!(bodies[reboot + 2], "whoami");
    // Nothing after the reboot was probed before it: it would not hold.
    let probed: Vec<usize> = (0..bodies.len())
        .filter(|&i| bodies[i].starts_with("np_tok=") && bodies[i].contains("/etc/probed"))
        .collect();
    assert!(!probed.is_empty() && probed[0] > reboot + 2, "{probed:?}");
    assert!(bodies.iter().any(|b| b.contains("echo after-True")));
}

#[test]
fn check_mode_reports_the_reboot_as_drift_and_reboots_nothing() {
    let (outcome, seen) = run(PLAY, true, 0, true);
    assert_eq!(statuses(&outcome)[1], Status::Drift);
    let seen = seen.lock().unwrap();
    assert!(seen.scripts.iter().all(|s| s.purpose == Purpose::Probe));
    assert_eq!(seen.logins, 0);
}

#[test]
fn a_host_that_does_not_come_back_fails_the_task_and_is_lost() {
    let play = PLAY.replace("reboot_timeout: 60", "reboot_timeout: 3");
    let (outcome, _) = run(&play, false, usize::MAX, true);
    let report = &outcome.reports[0];
    assert_eq!(statuses(&outcome), [Status::Changed, Status::Failed]);
    let msg = report.tasks[1].message.as_deref().unwrap();
    assert!(
        msg.starts_with("the host did not come back within 3 s after the reboot: "),
        "{msg}"
    );
    assert!(report.unreachable.is_some());
}

#[test]
fn a_connection_that_cannot_log_in_again_never_reboots() {
    let (outcome, seen) = run(PLAY, false, 0, false);
    assert_eq!(statuses(&outcome), [Status::Changed, Status::Failed]);
    let msg = outcome.reports[0].tasks[1].message.clone().unwrap();
    assert!(
        msg.contains("over a local connection it would restart this one"),
        "{msg}"
    );
    let seen = seen.lock().unwrap();
    assert!(!seen.scripts.iter().any(|s| s.body.contains("shutdown")));
}

#[test]
fn wait_for_connection_logs_in_again_until_the_host_answers() {
    let play = "- hosts: all\n  gather_facts: false\n  tasks:\n    - reboot: {reboot_command: 'shutdown -r now soon', reboot_timeout: 60}\n    - wait_for_connection: {sleep: 0, timeout: 30}\n      register: w\n    - debug: {msg: \"{{ w.elapsed is number }}\"}\n";
    let (outcome, seen) = run(play, false, 0, true);
    assert_eq!(
        statuses(&outcome),
        [Status::Changed, Status::Ok, Status::Ok]
    );
    assert!(outcome.reports[0].tasks[1].notes[0].starts_with("connected after "));
    assert_eq!(outcome.reports[0].tasks[2].notes, ["msg: true"]);
    assert!(seen
        .lock()
        .unwrap()
        .scripts
        .iter()
        .any(|s| s.body == "true"));
}

#[test]
fn a_command_after_a_reboot_runs_before_the_tasks_that_read_its_result() {
    let play = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: cat /proc/sys/kernel/random/boot_id\n      register: before\n      changed_when: false\n    - reboot:\n    - wait_for_connection:\n    - command: cat /proc/sys/kernel/random/boot_id\n      register: after\n      changed_when: false\n    - debug: {var: after.rc}\n    - assert: {that: after.rc == 0}\n";
    let (outcome, _) = run(play, false, 0, true);
    let report = &outcome.reports[0];
    let statuses = statuses(&outcome);
    assert_eq!(
        statuses,
        [
            Status::Ok,
            Status::Changed,
            Status::Ok,
            Status::Ok,
            Status::Ok,
            Status::Ok
        ]
    );
    // debug's `var` and assert's `that` read it without braces: the
    // command ran before either was decided.
    assert_eq!(report.tasks[4].notes, ["after.rc: 0"]);
}
