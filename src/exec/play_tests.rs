//! Play-level variables on a fake host: magic variables, templated
//! `hosts:`, the play's connection keywords, and loops under `when:`.

use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};

use super::prepared::testing::load;
use super::result::Status;
use super::*;
use crate::load::inventory::Inventory;
use crate::load::playbook::Playbook;
use crate::remote::fake::FakeTransport;
use crate::remote::{Output, Script};

/// Each host connected to, with the variables it was connected with.
type Connected = Vec<(String, Map<String, Value>)>;

/// Runs `text` against `inventory`, nothing being probed; returns the
/// outcome and the variables each host was connected with.
fn run_on(text: &str, inventory: &Inventory, extra: Value) -> (RunOutcome, Connected) {
    let (_dir, pb) = load(text);
    run_loaded(&pb, inventory, extra)
}

fn run_loaded(pb: &Playbook, inventory: &Inventory, extra: Value) -> (RunOutcome, Connected) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let connect = move |host: &str, vars: &Map<String, Value>| {
        seen2.lock().unwrap().push((host.to_string(), vars.clone()));
        let fake = FakeTransport::new(|_: &Script| {
            Ok(Output {
                status: 0,
                stdout: Vec::new(),
                stderr: Vec::new(),
            })
        });
        Ok(Box::new(fake) as Box<dyn crate::remote::Transport>)
    };
    let req = RunRequest {
        playbook: pb,
        inventory,
        shard: None,
        limit: None,
        opts: RunOptions {
            check: true,
            diff: false,
            tags: Vec::new(),
            skip_tags: Vec::new(),
            ansible_managed: None,
        },
        extra_vars: extra.as_object().cloned().unwrap_or_default(),
        forks: 1,
        connect: &connect,
    };
    let outcome = run_playbook(&req, &|_| {}).unwrap();
    let seen = seen.lock().unwrap().clone();
    (outcome, seen)
}

fn two_hosts() -> Inventory {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts.ini");
    std::fs::write(
        &path,
        "[gpu]\ng1.example.com rack=r1\ng2 rack=r2 ansible_user=admin\n",
    )
    .unwrap();
    Inventory::load(&path).unwrap()
}

fn notes(outcome: &RunOutcome, host: &str) -> Vec<String> {
    let report = outcome.reports.iter().find(|r| r.host == host).unwrap();
    report.tasks.iter().flat_map(|t| t.notes.clone()).collect()
}

#[test]
fn magic_variables_name_the_play_its_hosts_and_the_run() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ inventory_hostname_short }} {{ group_names }} {{ groups.gpu | length }} {{ ansible_play_hosts_all }} {{ ansible_play_batch }} {{ ansible_play_hosts }} {{ hostvars['g2'].rack }} {{ ansible_check_mode }} {{ ansible_version.major }}.{{ ansible_version.minor }} {{ playbook_dir is string }} {{ inventory_dir is string }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(
        notes(&outcome, "g1.example.com"),
        ["msg: g1 ['gpu'] 2 ['g1.example.com', 'g2'] ['g1.example.com', 'g2'] ['g1.example.com', 'g2'] r2 True 2.21 True True"]
    );
}

#[test]
fn the_runs_options_and_the_play_are_magic_variables_as_ansible_names_them() {
    let text = "- name: tune\n  hosts: gpu\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ ansible_play_name }} {{ ansible_run_tags }} {{ ansible_skip_tags }} {{ ansible_diff_mode }} {{ ansible_forks }} {{ ansible_verbosity }} {{ play_hosts }} {{ ansible_limit is defined }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(
        notes(&outcome, "g2"),
        ["msg: tune ['all'] [] False 1 0 ['g1.example.com', 'g2'] False"]
    );
}

#[test]
fn a_batch_sees_its_own_hosts_and_the_plays() {
    let text = "- hosts: gpu\n  gather_facts: false\n  serial: 1\n  tasks:\n    - debug: {msg: \"{{ ansible_play_batch }} {{ play_hosts }} {{ ansible_play_hosts }} {{ ansible_play_hosts_all }} {{ 'ansible_play_batch' in vars }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    let both = "['g1.example.com', 'g2']";
    assert_eq!(
        notes(&outcome, "g2"),
        [format!("msg: ['g2'] ['g2'] {both} {both} True")]
    );
}

/// What a host's tasks set outlives its play, as Ansible keeps it for the
/// run: the host's later plays have it, and so does `hostvars` in them; a
/// `run_once` task's set_fact is every host's; `delegate_facts` sets the
/// delegate's (here the implicit localhost) instead of the host's own.
#[test]
fn what_a_play_sets_is_kept_for_the_plays_after_it() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - set_fact: {mine: \"{{ inventory_hostname }}\"}\n    - debug: {msg: hi}\n      register: ran\n    - set_fact: {once: \"by {{ inventory_hostname }}\"}\n      run_once: true\n    - set_fact: {pw: s3}\n      delegate_to: localhost\n      delegate_facts: true\n- hosts: gpu\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ mine }} {{ ran is defined }} {{ once }} {{ hostvars['g2'].mine }} {{ hostvars['localhost'].pw }} {{ pw | default('not mine') }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    let shown: Vec<String> = outcome
        .reports
        .iter()
        .filter(|r| r.host == "g1.example.com")
        .flat_map(|r| r.tasks.iter().flat_map(|t| t.notes.clone()))
        .filter(|n| n.starts_with("msg: g1"))
        .collect();
    assert_eq!(
        shown,
        ["msg: g1.example.com True by g1.example.com g2 s3 not mine"]
    );
}

/// Ansible runs an imported playbook's plays from its folder: their
/// `playbook_dir` and where their `vars_files` are looked for.
#[test]
fn an_imported_playbooks_plays_run_from_its_folder() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let show = "  gather_facts: false\n  vars_files: [v.yml]\n  tasks:\n    - debug: {msg: \"{{ x }} {{ playbook_dir | basename }}\"}\n";
    write(
        "top.yml",
        &format!("- import_playbook: sub/inner.yml\n- hosts: gpu\n{show}"),
    );
    write("sub/inner.yml", &format!("- hosts: gpu\n{show}"));
    write("v.yml", "x: top\n");
    write("sub/vars/v.yml", "x: sub\n");
    let pb = crate::load::playbook::load(&dir.path().join("top.yml")).unwrap();
    let (outcome, _) = run_loaded(&pb, &two_hosts(), json!({}));
    let top = dir.path().file_name().unwrap().to_str().unwrap();
    let shown: Vec<String> = outcome
        .reports
        .iter()
        .filter(|r| r.host == "g2")
        .flat_map(|r| r.tasks.iter().flat_map(|t| t.notes.clone()))
        .collect();
    assert_eq!(
        shown,
        ["msg: sub sub".to_string(), format!("msg: top {top}")]
    );
}

#[test]
fn a_plays_order_orders_its_batches() {
    let play = |order: &str| {
        format!("- hosts: gpu\n  gather_facts: false\n  serial: 1\n  order: {order}\n  tasks:\n    - debug: {{msg: hi}}\n")
    };
    let ran = |order: &str| {
        let (outcome, _) = run_on(&play(order), &two_hosts(), json!({}));
        let hosts: Vec<String> = outcome.reports.iter().map(|r| r.host.clone()).collect();
        hosts
    };
    assert_eq!(ran("inventory"), ["g1.example.com", "g2"]);
    assert_eq!(ran("reverse_sorted"), ["g2", "g1.example.com"]);
    assert_eq!(ran("reverse_inventory"), ["g2", "g1.example.com"]);
    let mut shuffled = ran("shuffle");
    shuffled.sort();
    assert_eq!(shuffled, ["g1.example.com", "g2"]);
}

#[test]
fn set_fact_renders_templated_variable_names() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - set_fact: {\"{{ item.key }}\": \"{{ item.value }}\"}\n      loop: \"{{ {'tune_a': 1, 'tune_b': 'x'} | dict2items }}\"\n    - debug: {msg: \"{{ tune_a }} {{ tune_b }}\"}\n    - set_fact: {\"{{ 'not a name' }}\": 1}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(notes(&outcome, "g2"), ["msg: 1 x"]);
    let report = outcome.reports.iter().find(|r| r.host == "g2").unwrap();
    let failed = format!("{:?}", report.tasks.last());
    assert!(
        failed.contains("'not a name' is not a valid variable name"),
        "{failed}"
    );
}

#[test]
fn each_item_of_a_loop_sees_what_the_one_before_set() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - set_fact: {acc: \"{{ acc | default([]) + [item] }}\"}\n      loop: [1, 2, 3]\n    - debug: {msg: \"{{ acc }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(notes(&outcome, "g2"), ["msg: [1,2,3]"]);
}

#[test]
fn hostvars_of_an_unknown_host_is_undefined() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ hostvars['nope'] is defined }} {{ hostvars | list | length }}\"}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(notes(&outcome, "g2"), ["msg: False 2"]);
}

#[test]
fn assert_judges_in_the_runs_templates() {
    let text = "- hosts: gpu\n  gather_facts: false\n  tasks:\n    - assert:\n        that:\n          - hostvars['g1.example.com'].rack == 'r1'\n          - playbook_dir is string\n        success_msg: judged\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    assert_eq!(notes(&outcome, "g2"), ["judged"]);
}

#[test]
fn a_templated_hosts_pattern_renders_with_extra_and_play_vars() {
    let text = "- hosts: \"{{ target }}\"\n  gather_facts: false\n  tasks:\n    - debug: {msg: hi}\n- hosts: \"{{ second }}\"\n  vars: {second: g1.example.com}\n  gather_facts: false\n  tasks:\n    - debug: {msg: hi}\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({"target": "g2"}));
    let hosts: Vec<&str> = outcome.reports.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(hosts, ["g2", "g1.example.com"]);
    let (_dir, pb) = load("- hosts: \"{{ target }}\"\n  tasks: []\n");
    let inventory = two_hosts();
    let connect =
        |_: &str, _: &Map<String, Value>| -> Result<Box<dyn crate::remote::Transport>, _> {
            unreachable!("no host is selected")
        };
    let req = RunRequest {
        playbook: &pb,
        inventory: &inventory,
        shard: None,
        limit: None,
        opts: RunOptions {
            check: true,
            diff: false,
            tags: Vec::new(),
            skip_tags: Vec::new(),
            ansible_managed: None,
        },
        extra_vars: Map::new(),
        forks: 1,
        connect: &connect,
    };
    let Err(errs) = run_playbook(&req, &|_| {}) else {
        panic!("an undefined pattern variable must stop the run");
    };
    assert_eq!(errs[0].message, "hosts: undefined variable 'target'");
}

#[test]
fn remote_user_and_connection_yield_to_the_inventory() {
    let text = "- hosts: gpu\n  remote_user: ops\n  connection: local\n  gather_facts: false\n  tasks: []\n";
    let (_, seen) = run_on(text, &two_hosts(), json!({}));
    let user = |h: &str| {
        let vars = &seen.iter().find(|(n, _)| n == h).unwrap().1;
        (
            vars["ansible_user"].clone(),
            vars["ansible_connection"].clone(),
        )
    };
    assert_eq!(user("g1.example.com"), (json!("ops"), json!("local")));
    assert_eq!(user("g2"), (json!("admin"), json!("local")));
}

#[test]
fn an_undefined_loop_under_a_false_when_is_skipped() {
    let text = "- hosts: g2\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ item }}\"}\n      loop: \"{{ nothing }}\"\n      when: false\n    - debug: {msg: \"{{ item }}\"}\n      loop: \"{{ nothing }}\"\n      when: true\n    - debug: {msg: \"{{ item }}\"}\n      loop: \"{{ nothing }}\"\n      when: item > 1\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    let tasks = &outcome.reports[0].tasks;
    let statuses: Vec<Status> = tasks.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Skipped, Status::Failed, Status::Failed]);
    let why = tasks[1].message.as_deref().unwrap();
    assert!(why.contains("undefined variable 'nothing'"), "{why}");
}

#[test]
fn task_vars_reading_the_loop_item_render_per_item() {
    let text = "- hosts: g2\n  gather_facts: false\n  tasks:\n    - debug: {msg: \"{{ path }}\"}\n      vars: {path: \"/srv/{{ item.name }}\"}\n      loop: [{name: a}, {name: b}]\n    - debug: {msg: \"{{ x }}\"}\n      vars: {x: \"{{ undefined_thing }}\"}\n      when: false\n";
    let (outcome, _) = run_on(text, &two_hosts(), json!({}));
    let tasks = &outcome.reports[0].tasks;
    let notes: Vec<String> = tasks.iter().flat_map(|t| t.notes.clone()).collect();
    assert_eq!(notes, ["msg: /srv/a", "msg: /srv/b"]);
    assert_eq!(
        tasks[2].status,
        Status::Skipped,
        "a false when reads nothing else"
    );
}
