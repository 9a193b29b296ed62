//! `run_once` across the hosts of a batch: the first host still running
//! runs the task, and every other host waits for its result and takes it
//! as its own. Hosts earlier in the batch never wait for later ones, and a
//! worker takes hosts in batch order, so the host being waited for is
//! always running or done: it cannot deadlock.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex};

use serde_json::Value;

/// What the host that ran a task once left for the others.
#[derive(Clone)]
pub(crate) struct Ran {
    pub host: String,
    pub registered: Value,
    /// What the task set (`set_fact`): every host of the batch has it
    /// too, as in Ansible.
    pub sets: serde_json::Map<String, Value>,
    /// The failure that fails every host of the batch, as in Ansible.
    pub failed: Option<String>,
    /// Its `when:` was false there.
    pub skipped: bool,
    /// Check mode: what it registers is not known, as it did not run.
    pub unknown: bool,
}

/// Whether a host runs a `run_once` task or takes another's result.
pub(crate) enum Turn {
    Run,
    Take(Ran),
}

pub(crate) struct Once {
    hosts: Vec<String>,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Hosts done with the play.
    gone: BTreeSet<String>,
    /// Results by task (its address in the prepared play).
    ran: BTreeMap<usize, Ran>,
}

impl Once {
    pub fn new(hosts: &[String]) -> Self {
        Once {
            hosts: hosts.to_vec(),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        }
    }

    /// Waits until `host` is the first host still running, or another
    /// host ran the task.
    pub fn turn(&self, task: usize, host: &str) -> Turn {
        let mut state = self.state.lock().expect("not poisoned");
        loop {
            if let Some(ran) = state.ran.get(&task) {
                return Turn::Take(ran.clone());
            }
            let first = self.hosts.iter().find(|h| !state.gone.contains(*h));
            if first.is_none_or(|h| h == host) {
                return Turn::Run;
            }
            state = self.changed.wait(state).expect("not poisoned");
        }
    }

    pub fn ran(&self, task: usize, ran: Ran) {
        self.state
            .lock()
            .expect("not poisoned")
            .ran
            .insert(task, ran);
        self.changed.notify_all();
    }

    /// The host is done with the play: tasks it did not reach pass to the
    /// next host.
    pub fn leave(&self, host: &str) {
        let mut state = self.state.lock().expect("not poisoned");
        state.gone.insert(host.to_string());
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_host_still_running_runs_and_the_others_take_its_result() {
        let hosts: Vec<String> = ["h1", "h2", "h3"].map(String::from).to_vec();
        let once = Once::new(&hosts);
        assert!(matches!(once.turn(1, "h1"), Turn::Run));
        once.leave("h1");
        // h1 left before task 2: h2 runs it, h3 takes h2's result.
        std::thread::scope(|s| {
            let waiter = s.spawn(|| once.turn(2, "h3"));
            assert!(matches!(once.turn(2, "h2"), Turn::Run));
            let ran = Ran {
                host: "h2".into(),
                registered: Value::from(7),
                sets: Default::default(),
                failed: None,
                skipped: false,
                unknown: false,
            };
            once.ran(2, ran);
            match waiter.join().unwrap() {
                Turn::Take(r) => assert_eq!((r.host.as_str(), r.registered), ("h2", 7.into())),
                Turn::Run => panic!("h3 ran it too"),
            }
        });
    }
}
