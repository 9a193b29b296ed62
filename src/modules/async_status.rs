//! `async_status`: how a job left running (`async` with `poll: 0`) is
//! doing, read from the record it keeps in the task user's
//! `~/.ansible_async`, with what Ansible's plugin returns: `started` and
//! `finished`, `ansible_job_id` and `results_file`; once finished, the
//! job's own result, failed when it failed: a command's `rc`, `stdout` and
//! `stderr`, the JSON result of Ansible's module, or a native module's
//! planned result once its steps succeeded. A missing record fails with
//! "could not find job".
//! `mode: cleanup` removes the record and reports ok, as Ansible does.
//!
//! The record is read afresh by every attempt of an `until:` loop and by
//! every later task: a job's state changes with time, not with the tasks.
//! The task reports ok: the job's change was reported when it started.
//!
//! # Example
//!
//! ```yaml
//! - name: Build the NCCL tests in the background
//!   shell: make -C /opt/nccl-tests MPI=1 -j16
//!   async: 1800
//!   poll: 0
//!   register: build
//! - name: Wait for the build
//!   async_status:
//!     jid: "{{ build.ansible_job_id }}"
//!   register: job
//!   until: job.finished
//!   retries: 60
//!   delay: 30
//! ```

use serde_json::{json, Map, Value};

use crate::modules::kit::ansible::{last_line, run_result};
use crate::modules::kit::module::{command_msg, command_output, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Effect, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::async_job::{self, How, Job};
use crate::remote::probe::{Probe, ProbeResult};

pub const ASYNC_STATUS: ModuleSpec = ModuleSpec {
    name: "async_status",
    source: file!(),
    aliases: &[
        "ansible.builtin.async_status",
        "ansible.legacy.async_status",
    ],
    params: &AsyncStatusArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum Mode {
        Status = "status",
        Cleanup = "cleanup",
    }
}

module_params! {
    struct AsyncStatusArgs {
        /// the job's id, as the task that started it registered it (`ansible_job_id`)
        jid: String,
        /// `status` reads the job; `cleanup` removes its record
        mode: Mode = Mode::Status,
    }
}

struct AsyncStatus {
    jid: String,
    mode: Mode,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AsyncStatusArgs::read(p)?;
    Ok(Box::new(AsyncStatus {
        jid: a.jid,
        mode: a.mode,
    }))
}

impl Module for AsyncStatus {
    fn probes(&self) -> Vec<Probe> {
        vec![async_job::probe(&self.jid)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let probe = async_job::probe(&self.jid);
        let answer = facts.get(&probe.key)?;
        let (record, job) = async_job::read(answer).ok_or_else(|| ModuleError::Fact {
            key: probe.key.clone(),
            detail: answer.stdout.clone(),
        })?;
        let mut plan = Plan::noop();
        plan.returns = self.returns(&record, &job)?;
        match self.mode {
            Mode::Status => plan.effects.push(Effect::Invalidate(probe.key)),
            Mode::Cleanup => {
                plan.steps.push(async_job::cleanup(&self.jid));
                plan.upkeep = true;
                let gone = format!("{record}\nmissing\n");
                plan.effects
                    .push(Effect::Predict(probe.key, ProbeResult::ok(gone)));
            }
        }
        Ok(plan)
    }
}

impl AsyncStatus {
    /// What Ansible's plugin returns for the job, or its failure.
    fn returns(&self, record: &str, job: &Job) -> Result<Map<String, Value>, ModuleError> {
        let mut returns = match json!({
            "ansible_job_id": self.jid,
            "started": self.mode == Mode::Status,
            "finished": false,
            "stdout": "",
            "stderr": "",
            "stdout_lines": [],
            "stderr_lines": [],
        }) {
            Value::Object(m) => m,
            _ => unreachable!("a mapping"),
        };
        let place = match self.mode {
            Mode::Status => "results_file",
            Mode::Cleanup => "erased",
        };
        returns.insert(place.into(), json!(record));
        match (job, self.mode) {
            (Job::Missing, _) => {
                returns.insert("started".into(), json!(true));
                returns.insert("finished".into(), json!(true));
                Err(ModuleError::Returned {
                    msg: "could not find job".into(),
                    returns,
                })
            }
            (Job::Running, _) | (Job::Finished { .. }, Mode::Cleanup) => Ok(returns),
            (Job::Finished { output, how }, Mode::Status) => {
                returns.extend(finished(output, how));
                returns.insert("finished".into(), json!(true));
                match returns.get("failed") == Some(&json!(true)) {
                    false => Ok(returns),
                    true => Err(ModuleError::Returned {
                        msg: returns
                            .get("msg")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        returns,
                    }),
                }
            }
        }
    }
}

/// A finished job's own result, as the module that ran would have
/// registered it.
fn finished(output: &ProbeResult, how: &How) -> Map<String, Value> {
    match how {
        How::Output => {
            let mut result = command_output(output);
            result.insert("msg".into(), json!(command_msg(output.rc)));
            result
        }
        How::Json => run_result(output),
        How::Planned(planned) => {
            let mut result = match serde_json::from_str(planned) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            if output.rc != 0 {
                result.insert("failed".into(), json!(true));
                result.insert("msg".into(), json!(last_line(output)));
            }
            result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_test, facts_of};

    fn status(mode: &str, answer: &str) -> Result<Plan, ModuleError> {
        let m = build_test(&ASYNC_STATUS, json!({"jid": "j1.2", "mode": mode})).unwrap();
        let key = async_job::probe("j1.2").key;
        assert_eq!(m.probes(), [async_job::probe("j1.2")]);
        m.plan(&facts_of(&[(&key, answer)]))
    }

    const RECORD: &str = "/root/.ansible_async/j1.2";

    #[test]
    fn a_running_job_reads_started_not_finished_and_is_read_again_later() {
        let plan = status("status", &format!("{RECORD}\nrunning\n")).unwrap();
        assert_eq!(plan.returns["started"], true);
        assert_eq!(plan.returns["finished"], false);
        assert_eq!(plan.returns["results_file"], RECORD);
        assert_eq!(plan.returns["ansible_job_id"], "j1.2");
        assert!(plan.steps.is_empty() && plan.changes.is_empty());
        let key = async_job::probe("j1.2").key;
        assert_eq!(plan.effects, [Effect::Invalidate(key)]);
    }

    #[test]
    fn a_finished_job_returns_its_commands_result() {
        let plan = status("status", &format!("{RECORD}\nfinished 0 3 7\nhi\noutput\n")).unwrap();
        assert_eq!(plan.returns["finished"], true);
        assert_eq!(plan.returns["stdout"], "hi");
        assert_eq!(plan.returns["stdout_lines"], json!(["hi"]));
        assert_eq!(plan.returns["rc"], 0);
        let failed =
            status("status", &format!("{RECORD}\nfinished 2 0 7\noutput\nno\n")).unwrap_err();
        let ModuleError::Returned { msg, returns } = failed else {
            panic!("a failure with the job's result");
        };
        assert_eq!(msg, "The command exited with a non-zero return code.");
        assert_eq!(
            (returns["rc"].clone(), returns["stderr"].clone()),
            (json!(2), json!("no"))
        );
    }

    #[test]
    fn a_finished_modules_job_returns_the_result_its_module_gave() {
        let json = r#"{"changed": true, "msg": "ok", "invocation": {}}"#;
        let n = json.len() + 1;
        let plan = status(
            "status",
            &format!("{RECORD}\nfinished 0 {n} 5\n{json}\njson\n"),
        )
        .unwrap();
        assert_eq!(
            (plan.returns["msg"].clone(), plan.returns["changed"].clone()),
            (json!("ok"), json!(true))
        );
        assert!(plan.returns.get("invocation").is_none());
        let planned = r#"{"changed": true, "dest": "/etc/x"}"#;
        let how = format!("planned\n{planned}\n");
        let answer = format!("{RECORD}\nfinished 0 0 {}\n{how}", how.len());
        assert_eq!(status("status", &answer).unwrap().returns["dest"], "/etc/x");
        let answer = format!("{RECORD}\nfinished 1 0 {}\n{how}cp: denied\n", how.len());
        let e = status("status", &answer).unwrap_err();
        assert_eq!(e.to_string(), "cp: denied");
        assert_eq!(e.returns()["dest"], "/etc/x");
    }

    #[test]
    fn a_missing_job_fails_as_ansibles_does() {
        let e = status("status", &format!("{RECORD}\nmissing\n")).unwrap_err();
        assert_eq!(e.to_string(), "could not find job");
        assert_eq!(e.returns()["finished"], true);
        assert!(status("cleanup", &format!("{RECORD}\nmissing\n")).is_err());
    }

    #[test]
    fn cleanup_removes_the_record_and_reports_ok() {
        let plan = status("cleanup", &format!("{RECORD}\nrunning\n")).unwrap();
        assert!(plan.changes.is_empty() && plan.upkeep);
        assert_eq!(plan.steps, [async_job::cleanup("j1.2")]);
        assert_eq!(plan.returns["erased"], RECORD);
        assert_eq!(plan.returns["started"], false);
    }
}
