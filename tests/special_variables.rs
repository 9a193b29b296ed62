//! Facts and special variables, differentially: one play through nodeprov
//! and through ansible-playbook (the newest ansible-core scripts/test.sh
//! installs) on the same isolated sshd host, each printing the same
//! variables as JSON; every value must be equal, except where a value is
//! the moment or the tool itself (listed below, with why).

mod support;

use serde_json::{json, Value};
use support::control::{Control, Run};
use support::newest_ansible_bin;
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

/// The variables both tools must give alike, as one JSON object.
///
/// Left out or normalised: `ansible_run_tags` is sorted (Ansible makes it
/// from a set, in no fixed order), `date_time` is compared by its keys
/// and zone (its values are the moment, and `tz_dst` is not read), and
/// `ansible_env` by the login's `HOME` and `USER` (its `PATH` and the like
/// are the session's: sshd's for nodeprov's shell, the module's Python's
/// for Ansible).
const SHOWN: &str = r#"{
  'run_tags': ansible_run_tags | sort, 'skip_tags': ansible_skip_tags,
  'check_mode': ansible_check_mode, 'diff_mode': ansible_diff_mode,
  'forks': ansible_forks, 'verbosity': ansible_verbosity,
  'limit': ansible_limit | default('unset'), 'play_name': ansible_play_name,
  'play_hosts': play_hosts, 'batch': ansible_play_batch,
  'home': ansible_env.HOME, 'user': ansible_env.USER | default('unset'),
  'uid': ansible_user_uid, 'gid': ansible_user_gid, 'dir': ansible_user_dir,
  'shell': ansible_user_shell, 'user_id': ansible_user_id,
  'python_major': ansible_python.version.major, 'python_type': ansible_python.type,
  'python_version': ansible_python_version,
  'python_info': ansible_facts.python.version_info[:3],
  'time_keys': ansible_date_time.keys() | reject('equalto', 'tz_dst') | sort,
  'tz': ansible_date_time.tz, 'tz_offset': ansible_date_time.tz_offset,
  'year': ansible_date_time.year,
  'play_roles': ansible_play_role_names, 'role_names': role_names,
  'all_roles': ansible_role_names | sort,
  'dependent_roles': ansible_dependent_role_names | sort,
  'loop_msgs': looped.results | map(attribute='msg') | list,
  'loop_keys': looped.results | map(attribute='ansible_loop') | list,
  'index_var': looped.results | map(attribute='ansible_index_var') | list,
  'indexes': looped.results | map(attribute='i') | list,
}"#;

/// A loop with `loop_control`'s `index_var` and `extended`, registered.
const LOOPED: &str = "- name: looped
  debug:
    msg: \"{{ i }} {{ ansible_loop.index }} {{ ansible_loop.revindex0 }} {{ ansible_loop.first }} {{ ansible_loop.previtem | default('-') }}\"
  loop: [a, b, c]
  loop_control: {index_var: i, extended: true}
  register: looped
";

/// What a role included from another's tasks sees of its parents.
const PARENTS: &str =
    "{'names': ansible_parent_role_names, 'paths': ansible_parent_role_paths, 'role': role_name}";

/// A task printing `shown` as JSON.
fn show(name: &str, shown: &str) -> String {
    let shown = shown.replace('\n', " ");
    format!("- name: {name}\n  debug:\n    msg: \"{{{{ {shown} | to_json }}}}\"\n")
}

/// The play, and its roles: `outer` depends on `dep` and includes `inner`,
/// which shows its parents.
fn write_play(control: &Control) -> String {
    control.write("roles/outer/meta/main.yml", "dependencies: [dep]\n");
    control.write(
        "roles/outer/tasks/main.yml",
        "- include_role: {name: inner}\n",
    );
    control.write("roles/dep/tasks/main.yml", "- debug: {msg: dep}\n");
    control.write("roles/inner/tasks/main.yml", &show("parents", PARENTS));
    let task: String = (LOOPED.to_string() + &show("show", SHOWN))
        .lines()
        .map(|l| format!("    {l}\n"))
        .collect();
    control.write(
        "site.yml",
        &format!("- name: special\n  hosts: fleet\n  roles: [outer]\n  tasks:\n{task}"),
    )
}

/// A task's JSON message, by task name (a role's task without its
/// `role : ` prefix), from ansible-playbook's JSON document.
fn ansible_value(doc: &Value, task: &str) -> Value {
    let msg = doc["plays"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"]["name"].as_str().unwrap().rsplit(" : ").next() == Some(task))
        .and_then(|t| t["hosts"].as_object()?.values().next()?["msg"].as_str())
        .unwrap_or_else(|| panic!("no message: {doc:#}"))
        .to_string();
    serde_json::from_str(&msg).unwrap()
}

fn nodeprov_value(run: &Run, task: &str) -> Value {
    let task = &run.hosts()[0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == task)
        .unwrap_or_else(|| panic!("no task '{task}': {run}"))
        .clone();
    let msg = task["notes"][0].as_str().unwrap();
    serde_json::from_str(msg.strip_prefix("msg: ").unwrap()).unwrap()
}

#[test]
fn facts_and_special_variables_are_ansibles() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &fleet.inventory("root", "ansible_python_interpreter=/usr/bin/python3"),
    );
    let playbook = write_play(&control);
    let python = newest_ansible_bin().join("python");
    for (args, check) in [
        (
            vec!["-f", "5", "-t", "all,never", "--skip-tags", "slow"],
            true,
        ),
        (vec!["-f", "3", "--limit", host.name()], false),
    ] {
        let verb = if check { "check" } else { "apply" };
        let mut ours =
            control.nodeprov(&[&[verb, &playbook, "-i", &inventory], &args[..]].concat());
        ours.env("NODEPROV_ANSIBLE_PYTHON", &python);
        let run = Run::json(ours);
        assert!(run.code == 0, "{run}");
        let mut theirs_args = vec!["-i", inventory.as_str(), playbook.as_str()];
        theirs_args.extend(&args);
        if check {
            // nodeprov's check is Ansible's --check --diff.
            theirs_args.extend(["--check", "--diff"]);
        }
        let (code, doc) = control.ansible_playbook(&theirs_args);
        assert_eq!(code, 0, "{doc:#}");
        for task in ["show", "parents"] {
            let ours = nodeprov_value(&run, task);
            let theirs = ansible_value(&doc, task);
            assert_eq!(ours, theirs, "{task}: {verb} {args:?}");
        }
        // Not vacuous: the values are the host's, the run's and the play's.
        let ours = nodeprov_value(&run, "show");
        assert_eq!(ours["dir"], "/root");
        assert_eq!(ours["check_mode"], json!(check));
        assert_eq!(ours["all_roles"], json!(["dep", "inner", "outer"]));
        assert_eq!(nodeprov_value(&run, "parents")["names"], json!(["outer"]));
    }
    assert_machine_unchanged(&before);
}
