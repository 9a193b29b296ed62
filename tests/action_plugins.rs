//! The action plugins nodeprov runs natively, differentially: the same
//! playbook through nodeprov and through ansible-playbook (the newest
//! ansible-core scripts/test.sh installs), on isolated sshd hosts.
//!
//! `script`: a controller file with its arguments, `chdir`, `creates`,
//! `removes`, `executable` and a failing status give the same registered
//! results, and leave no copy on the host; so do `command`, `shell` and
//! `raw` skipped, failing and run.
//!
//! `group_by`: the plays after it select the new groups, and see them in
//! `groups`, `group_names` and the groups' `group_vars/`. `add_host`: the
//! plays after it reach the new host through the variables it was given.
//! `assemble` of fragments on the host runs Ansible's module, as Ansible's
//! plugin hands it over. `async_status` reads jobs that `poll: 0` left
//! running (commands, a native module, Ansible's module), finished or
//! failed, as another user, removed.
//!
//! Argument specs: every case of
//! `validate_argument_spec` (types and their conversions, choices,
//! aliases, defaults, suboptions, `mutually_exclusive`, `required_if`,
//! `required_by`...) must pass or fail alike, with the same message; and
//! a role's `meta/argument_specs.yml` is checked first, for the entry
//! point it runs from, with its parameters and variables.

mod support;

use std::process::Command;

use serde_json::Value;
use support::control::{Control, Run};
use support::newest_ansible_bin;
use support::sshd::SshFleet;
use support::{assert_machine_unchanged, machine_digest};

/// Argument specs and what each task is given as `provided_arguments`,
/// in YAML flow style.
const CASES: &[(&str, &str)] = &[
    (r#"{port: {type: int}}"#, r#"{port: "22"}"#),
    (r#"{port: {type: int}}"#, r#"{port: "4.5"}"#),
    (r#"{port: {type: int}}"#, r#"{port: 4.0}"#),
    (r#"{port: {type: int}}"#, r#"{port: [1]}"#),
    (r#"{port: {type: int, required: true}}"#, r#"{}"#),
    (r#"{a: {required: true}, b: {required: true}}"#, r#"{}"#),
    (r#"{ratio: {type: float}}"#, r#"{ratio: "x"}"#),
    (r#"{ratio: {type: float}}"#, r#"{ratio: "1.5"}"#),
    (r#"{enabled: {type: bool}}"#, r#"{enabled: "maybe"}"#),
    (r#"{enabled: {type: bool}}"#, r#"{enabled: "Yes"}"#),
    (r#"{enabled: {type: bool}}"#, r#"{enabled: [1]}"#),
    (r#"{names: {type: list}}"#, r#"{names: {a: 1}}"#),
    (
        r#"{names: {type: list, elements: int}}"#,
        r#"{names: [1, "2", "x", 3.5]}"#,
    ),
    (
        r#"{names: {type: list, elements: str}}"#,
        r#"{names: "a,b"}"#,
    ),
    (r#"{opts: {type: dict}}"#, r#"{opts: "a=1 b=2"}"#),
    (r#"{opts: {type: dict}}"#, r#"{opts: "a=1 b"}"#),
    (r#"{opts: {type: dict}}"#, r#"{opts: "plain"}"#),
    (r#"{opts: {type: dict}}"#, r#"{opts: 5}"#),
    (r#"{name: {type: str}}"#, r#"{name: 5}"#),
    (r#"{size: {type: bytes}}"#, r#"{size: "1x"}"#),
    (r#"{blob: {type: json}}"#, r#"{blob: 5}"#),
    (r#"{mode: {choices: [fast, safe]}}"#, r#"{mode: slow}"#),
    (r#"{mode: {choices: [fast, safe]}}"#, r#"{mode: safe}"#),
    (
        r#"{mode: {type: list, choices: [a, b]}}"#,
        r#"{mode: [a, c, d]}"#,
    ),
    (r#"{mode: {choices: "abc"}}"#, r#"{mode: a}"#),
    (r#"{port: {type: int, choices: [1, 2]}}"#, r#"{port: "3"}"#),
    (r#"{path: {aliases: [dest]}}"#, r#"{dest: /x, other: 1}"#),
    (r#"{path: {aliases: [dest], type: int}}"#, r#"{dest: "no"}"#),
    (r#"{a: {required: true, default: 1}}"#, r#"{}"#),
    (r#"{a: {type: nosuchtype}}"#, r#"{a: 1}"#),
    (r#"{a: {}}"#, r#"{b: 1, c: 2}"#),
    (
        r#"{disk: {type: dict, options: {dev: {required: true}, size: {type: int}}}}"#,
        r#"{disk: {size: "x"}}"#,
    ),
    (
        r#"{disk: {type: dict, options: {dev: {}}}}"#,
        r#"{disk: {dev: a, extra: 1}}"#,
    ),
    (
        r#"{disks: {type: list, elements: dict, options: {dev: {required: true}}}}"#,
        r#"{disks: [{dev: a}, {}, "no"]}"#,
    ),
    (
        r#"{disks: {type: list, elements: dict, options: {dev: {}}}}"#,
        r#"{disks: [5]}"#,
    ),
    (
        r#"{disk: {type: dict, apply_defaults: true, options: {fs: {default: xfs, choices: [ext4]}}}}"#,
        r#"{}"#,
    ),
    (
        r#"{disk: {type: dict, mutually_exclusive: [[a, b]], options: {a: {}, b: {}}}}"#,
        r#"{disk: {a: 1, b: 2}}"#,
    ),
    (
        r#"{disk: {type: dict, required_together: [[a, b]], options: {a: {}, b: {}}}}"#,
        r#"{disk: {a: 1}}"#,
    ),
    (
        r#"{disk: {type: dict, required_one_of: [[a, b]], options: {a: {}, b: {}}}}"#,
        r#"{disk: {}}"#,
    ),
    (
        r#"{disk: {type: dict, required_if: [[state, present, [a, b]]], options: {state: {}, a: {}, b: {}}}}"#,
        r#"{disk: {state: present, a: 1}}"#,
    ),
    (
        r#"{disk: {type: dict, required_if: [[state, present, [a, b], true]], options: {state: {}, a: {}, b: {}}}}"#,
        r#"{disk: {state: present, a: 1}}"#,
    ),
    (
        r#"{disk: {type: dict, required_by: {a: [b]}, options: {a: {}, b: {}}}}"#,
        r#"{disk: {a: 1}}"#,
    ),
    (
        r#"{outer: {type: dict, options: {inner: {type: dict, options: {n: {type: int}}}}}}"#,
        r#"{outer: {inner: {n: "z"}}}"#,
    ),
];

/// The play of every case: a failure is kept, so every case runs.
fn cases_play() -> String {
    let mut play = String::from("- hosts: all\n  gather_facts: false\n  tasks:\n");
    for (i, (spec, given)) in CASES.iter().enumerate() {
        play += &format!(
            "    - name: case {i}\n      validate_argument_spec:\n        argument_spec: {spec}\n        provided_arguments: {given}\n      ignore_errors: true\n"
        );
    }
    play
}

/// Ansible lists its valid booleans in an order that changes per
/// process; sorted, both say the same. ansible-core 2.19 and later name
/// their internal wrappers of a string or a number where 2.15-2.18 (and
/// nodeprov) name the plain type.
fn normalised(msg: &str) -> String {
    const AT: &str = "Valid booleans include: ";
    let wrapper = regex::Regex::new(
        r"ansible\.module_utils\._internal\._datatag\._AnsibleTagged(\w+)|_AnsibleTagged(\w+)",
    )
    .unwrap();
    let msg = wrapper.replace_all(msg, |c: &regex::Captures| {
        c.get(1).or(c.get(2)).unwrap().as_str().to_lowercase()
    });
    let mut lines = Vec::new();
    for line in msg.lines() {
        match line.split_once(AT) {
            Some((head, list)) => {
                let mut items: Vec<&str> = list.split(", ").collect();
                items.sort();
                lines.push(format!("{head}{AT}{}", items.join(", ")));
            }
            None => lines.push(line.to_string()),
        }
    }
    lines.join("\n")
}

/// (task name, failed, message) of each task nodeprov ran, play by play.
fn nodeprov_results(run: &Run, host: &str) -> Vec<(String, bool, String)> {
    run.hosts()
        .iter()
        .filter(|h| h["host"] == host)
        .flat_map(|h| h["tasks"].as_array().unwrap().iter())
        .map(|t| {
            let notes: Vec<&str> = t["notes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                // `debug` notes name what they show.
                .map(|n| n.strip_prefix("msg: ").unwrap_or(n))
                .collect();
            let msg = t["message"].as_str().map_or(notes.join("\n"), String::from);
            (
                t["task"].as_str().unwrap().to_string(),
                t["status"] == "failed",
                normalised(&msg),
            )
        })
        .collect()
}

/// The same from ansible-playbook's JSON callback.
fn ansible_results(doc: &Value, host: &str) -> Vec<(String, bool, String)> {
    doc["plays"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["tasks"].as_array().unwrap().iter())
        .filter_map(|t| Some((t, t["hosts"].get(host)?)))
        .map(|(t, r)| {
            // Ansible names a role's task `role : name`.
            let name = t["task"]["name"].as_str().unwrap();
            (
                name.rsplit(" : ").next().unwrap().to_string(),
                r["failed"] == true,
                normalised(r["msg"].as_str().unwrap_or_default()),
            )
        })
        .collect()
}

fn ansible_playbook(control: &Control, playbook: &str, inventory: &str) -> Value {
    control.ansible_playbook(&["-i", inventory, playbook]).1
}

const ROLE_SPEC: &str = r#"
argument_specs:
  main:
    short_description: the GPU driver
    options:
      driver_branch: {type: int, required: true}
      driver_flavor: {choices: [open, proprietary], default: open}
  swap:
    options:
      swap_mb: {type: int, required: true}
"#;

const ROLE_PLAYS: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - import_role: {name: driver}
      vars: {driver_branch: "580"}
    - import_role: {name: driver}
      vars: {driver_branch: new}
      ignore_errors: true
    - import_role: {name: driver, tasks_from: swap}
      vars: {swap_mb: 1024}
    - import_role: {name: driver, tasks_from: swap}
      ignore_errors: true
    - import_role: {name: driver, tasks_from: other}
- hosts: all
  gather_facts: false
  roles:
    - role: driver
      driver_branch: 550
      driver_flavor: closed
      ignore_errors: true
"#;

#[test]
fn validate_argument_spec_and_role_specs_judge_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &fleet.inventory("root", "ansible_python_interpreter=/usr/bin/python3"),
    );
    let playbook = control.write("site.yml", &(cases_play() + ROLE_PLAYS));
    for dir in ["roles/driver/meta", "roles/driver/tasks"] {
        std::fs::create_dir_all(control.path(dir)).unwrap();
    }
    control.write("roles/driver/meta/argument_specs.yml", ROLE_SPEC);
    control.write(
        "roles/driver/tasks/main.yml",
        "- name: show\n  debug: {msg: 'branch {{ driver_branch }} {{ driver_flavor | default(\"unset\") }}'}\n",
    );
    control.write(
        "roles/driver/tasks/swap.yml",
        "- name: show\n  debug: {msg: 'swap {{ swap_mb | default(0) }}'}\n",
    );
    control.write(
        "roles/driver/tasks/other.yml",
        "- name: show\n  debug: {msg: 'no spec for this entry'}\n",
    );

    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    let doc = ansible_playbook(&control, &playbook, &inventory);
    let ours = nodeprov_results(&run, host.name());
    let theirs = ansible_results(&doc, host.name());
    // Both ran every case and every role task, failures included.
    assert_eq!(theirs.len(), CASES.len() + 11, "{doc}");
    assert_eq!(ours.len(), theirs.len(), "{run}");
    assert!(
        theirs.iter().filter(|(_, failed, _)| *failed).count() >= 30,
        "{theirs:#?}"
    );
    let differences: Vec<String> = theirs
        .iter()
        .zip(&ours)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("ansible-playbook: {a:?}\nnodeprov:         {b:?}"))
        .collect();
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
    drop(fleet);
    assert_machine_unchanged(&before);
}

const CHECK_SCRIPT: &str = "#!/bin/sh\necho \"args: $*\"\necho \"in $(pwd)\"\necho \"to stderr\" >&2\ntouch \"/root/ran-$1\"\n";

const SCRIPT_PLAY: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - script: check.sh "a b" 'c $HOME'
      register: plain
    - script: check.sh x
      args: {chdir: /tmp, creates: /root/ran-x}
      register: created
    - script: check.sh x
      args: {chdir: /tmp, creates: /root/ran-x}
      register: again
    - script: {cmd: "check.sh exe", executable: /bin/bash}
      register: exe
    - script: fail.sh
      register: failing
      ignore_errors: true
    - script: check.sh gone
      args: {removes: /root/nothing-here}
      register: removes
    - command: /bin/echo not run
      args: {creates: /root/ran-x}
      register: command_skip
    - shell: echo out; echo err >&2; exit 4
      register: shell_fail
      ignore_errors: true
    - raw: echo raw
      register: raw
    - command: {cmd: /bin/echo $HOME, executable: /bin/bash}
      register: command_executable
    - copy:
        dest: /root/results.json
        content: "{{ {'plain': plain, 'created': created, 'again': again, 'exe': exe, 'failing': failing, 'removes': removes,
                      'command_skip': command_skip, 'shell_fail': shell_fail, 'raw': raw,
                      'command_executable': command_executable} | to_json }}"
"#;

/// An inventory of the first host for nodeprov and one of the second for
/// ansible-playbook, so that each tool changes a host of its own.
fn side_by_side(control: &Control, fleet: &SshFleet, extra: &str) -> (String, String) {
    let ini = |host: &support::sshd::SshHost| {
        support::sshd::inventory(
            std::slice::from_ref(host),
            "root",
            &format!("ansible_python_interpreter=/usr/bin/python3 {extra}"),
        )
    };
    (
        control.write("ours.ini", &ini(&fleet.hosts[0])),
        control.write("theirs.ini", &ini(&fleet.hosts[1])),
    )
}

/// What a registered result says, without what differs by nature (times,
/// the temporary path).
fn registered(results: &Value) -> Value {
    let keys = [
        "rc",
        "stdout",
        "stdout_lines",
        "stderr",
        "stderr_lines",
        "changed",
        "failed",
        "skipped",
        "msg",
    ];
    let map = results.as_object().unwrap();
    Value::Object(
        map.iter()
            .map(|(task, r)| {
                let kept = keys
                    .iter()
                    .map(|k| (k.to_string(), r.get(*k).cloned().unwrap_or(Value::Null)))
                    .collect();
                (task.clone(), Value::Object(kept))
            })
            .collect(),
    )
}

#[test]
fn script_runs_a_controller_file_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (ours_inv, theirs_inv) = side_by_side(&control, &fleet, "ansible_ssh_use_tty=false");
    std::fs::create_dir_all(control.path("files")).unwrap();
    control.write("files/check.sh", CHECK_SCRIPT);
    control.write("files/fail.sh", "#!/bin/sh\necho nope\nexit 3\n");
    let playbook = control.write("script.yml", SCRIPT_PLAY);

    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &ours_inv]));
    assert_eq!(run.code, 0, "{run}");
    ansible_playbook(&control, &playbook, &theirs_inv);
    let results = |host: &support::sshd::SshHost| -> Value {
        let text = std::fs::read_to_string(host.host.path("/root/results.json")).unwrap();
        registered(&serde_json::from_str(&text).unwrap())
    };
    let (ours, theirs) = (results(&fleet.hosts[0]), results(&fleet.hosts[1]));
    assert_eq!(
        ours, theirs,
        "nodeprov:\n{ours:#}\nansible-playbook:\n{theirs:#}"
    );
    assert_eq!(
        theirs["plain"]["stdout_lines"][0], "args: a b c $HOME",
        "{theirs:#}"
    );
    assert_eq!(theirs["failing"]["rc"], 3, "{theirs:#}");
    for host in &fleet.hosts {
        assert!(host.host.path("/root/ran-a b").exists());
        let tmp = host.host.path("/root/.ansible/tmp");
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .map(|d| d.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{}: {left:?}", host.name());
    }
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// Plays that group the hosts by name, then select one group, a group
/// no host joined, and the parent group.
fn group_by_plays(first: &str, second: &str) -> String {
    format!(
        r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: group
      group_by:
        key: "role_{{{{ inventory_hostname }}}}"
        parents: [gpu]
      register: joined
    - name: group again
      group_by:
        key: "role_{{{{ inventory_hostname }}}}"
        parents: gpu
      register: again
    - name: judged
      debug:
        msg: "{{{{ joined.changed }}}} {{{{ again.changed }}}}"
    - name: own groups
      debug:
        msg: "{{{{ group_names | join(',') }}}} {{{{ greeting | default('none') }}}}"
- hosts: role_{first}
  gather_facts: false
  tasks:
    - name: first
      debug:
        msg: "{{{{ greeting | default('none') }}}} {{{{ group_names | join(',') }}}} {{{{ groups['gpu'] | sort | join(',') }}}}"
- hosts: role_nobody
  gather_facts: false
  tasks:
    - name: nobody
      debug: {{msg: never}}
- hosts: gpu
  gather_facts: false
  tasks:
    - name: every
      debug:
        msg: "{{{{ inventory_hostname }}}} {{{{ greeting | default('none') }}}} {{{{ groups['role_{second}'] | join(',') }}}}"
"#
    )
}

/// Whether each task of the host whose name starts with `prefix`
/// changed, in our report.
fn changed_of(run: &Run, host: &str, prefix: &str) -> Vec<bool> {
    (run.hosts().iter())
        .filter(|h| h["host"] == host)
        .flat_map(|h| h["tasks"].as_array().unwrap().iter())
        .filter(|t| t["task"].as_str().unwrap().starts_with(prefix))
        .map(|t| t["status"] == "changed")
        .collect()
}

/// The same from ansible-playbook's JSON callback.
fn ansible_changed_of(doc: &Value, host: &str, prefix: &str) -> Vec<bool> {
    (doc["plays"].as_array().unwrap().iter())
        .flat_map(|p| p["tasks"].as_array().unwrap().iter())
        .filter(|t| t["task"]["name"].as_str().unwrap().starts_with(prefix))
        .filter_map(|t| Some(t["hosts"].get(host)?["changed"] == true))
        .collect()
}

#[test]
fn group_by_makes_groups_the_later_plays_select_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let inventory = control.write(
        "inventory.ini",
        &fleet.inventory("root", "ansible_python_interpreter=/usr/bin/python3"),
    );
    std::fs::create_dir_all(control.path("group_vars")).unwrap();
    let (first, second) = (fleet.hosts[0].name(), fleet.hosts[1].name());
    control.write(
        &format!("group_vars/role_{first}.yml"),
        "greeting: hello-one\n",
    );
    let playbook = control.write("groups.yml", &group_by_plays(first, second));
    // Groups only a group_by makes are no typo to `validate`.
    let mut validate = Command::new(env!("CARGO_BIN_EXE_nodeprov"));
    validate.args(["validate", &playbook, "-i", &inventory]);
    let validated = Run::of(validate);
    assert_eq!(validated.code, 0, "{validated}");
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    let doc = ansible_playbook(&control, &playbook, &inventory);
    // What group_by returns besides `changed` differs (our notes say
    // what it did); `changed` itself is compared below.
    let besides_grouping = |results: Vec<(String, bool, String)>| -> Vec<_> {
        (results.into_iter())
            .filter(|(task, _, _)| !task.starts_with("group"))
            .collect()
    };
    for host in &fleet.hosts {
        let ours = besides_grouping(nodeprov_results(&run, host.name()));
        let theirs = besides_grouping(ansible_results(&doc, host.name()));
        assert_eq!(ours, theirs, "{}", host.name());
        assert_eq!(
            changed_of(&run, host.name(), "group"),
            ansible_changed_of(&doc, host.name(), "group"),
            "{}",
            host.name()
        );
    }
    // Changed when the host joined, not when it was in the group already.
    assert_eq!(changed_of(&run, first, "group"), [true, false]);
    let seen = nodeprov_results(&run, first);
    assert_eq!(seen[2].2, "True False", "{seen:?}");
    // The host's own groups and their variables, from its next task on.
    assert_eq!(seen[3].2, format!("fleet,gpu,role_{first} hello-one"));
    let mut names = [first, second];
    names.sort();
    assert_eq!(
        seen[4].2,
        format!("hello-one fleet,gpu,role_{first} {}", names.join(",")),
        "{seen:?}"
    );
    // Grouped twice, judged and its own groups, the first play; not in
    // role_nobody; the parent group.
    assert_eq!(seen.len(), 6, "{seen:?}");
    drop(fleet);
    assert_machine_unchanged(&before);
}

#[test]
fn add_host_gives_the_later_plays_a_host_they_reach_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (known, unlisted) = (&fleet.hosts[0], &fleet.hosts[1]);
    let inventory = control.write(
        "inventory.ini",
        &support::sshd::inventory(
            std::slice::from_ref(known),
            "root",
            "ansible_python_interpreter=/usr/bin/python3",
        ),
    );
    std::fs::create_dir_all(control.path("host_vars")).unwrap();
    control.write("host_vars/extra.yml", "role: from-host-vars\n");
    let playbook = control.write(
        "hosts.yml",
        &format!(
            r#"
- hosts: all
  gather_facts: false
  tasks:
    - name: add
      add_host:
        name: extra
        groups: added,late
        ansible_host: {ip}
        ansible_user: root
        ansible_ssh_private_key_file: {key}
        ansible_python_interpreter: /usr/bin/python3
    - name: add again
      add_host:
        name: extra
        groups: [added, late]
        ansible_host: {ip}
        ansible_user: root
        ansible_ssh_private_key_file: {key}
        ansible_python_interpreter: /usr/bin/python3
    - name: seen in its play
      debug:
        msg: "{{{{ hostvars['extra'].role }}}} {{{{ hostvars['extra'].ansible_host }}}}"
    - name: reached from its play
      command: cat /etc/hostname
      delegate_to: extra
      register: delegated
      changed_when: false
    - name: delegated
      debug:
        msg: "{{{{ delegated.stdout }}}}"
- hosts: added
  gather_facts: false
  tasks:
    - name: reached
      command: cat /etc/hostname
      register: name
      changed_when: false
    - name: seen
      debug:
        msg: "{{{{ inventory_hostname }}}} {{{{ name.stdout }}}} {{{{ role }}}} {{{{ groups['late'] | join(',') }}}} {{{{ group_names | join(',') }}}}"
"#,
            ip = unlisted.ip(),
            key = unlisted.key_path().display()
        ),
    );
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &inventory]));
    assert_eq!(run.code, 0, "{run}");
    let doc = ansible_playbook(&control, &playbook, &inventory);
    let ours = nodeprov_results(&run, "extra");
    let theirs = ansible_results(&doc, "extra");
    assert_eq!(ours, theirs);
    // A new host is a change; the same host again with the same groups
    // and variables is none.
    let added = changed_of(&run, known.name(), "add");
    assert_eq!(added, ansible_changed_of(&doc, known.name(), "add"));
    assert_eq!(added, [true, false]);
    // The play that added it reads its variables and reaches it.
    let besides_adding = |results: Vec<(String, bool, String)>| -> Vec<_> {
        (results.into_iter())
            .filter(|(task, _, _)| !task.starts_with("add"))
            .collect()
    };
    let adder = besides_adding(nodeprov_results(&run, known.name()));
    assert_eq!(adder, besides_adding(ansible_results(&doc, known.name())));
    let msgs: Vec<&str> = adder.iter().map(|(_, _, msg)| msg.as_str()).collect();
    assert_eq!(
        msgs,
        [
            format!("from-host-vars {}", unlisted.ip()).as_str(),
            "",
            unlisted.name()
        ],
        "{adder:?}"
    );
    assert_eq!(
        ours.last().unwrap().2,
        format!("extra {} from-host-vars extra added,late", unlisted.name()),
        "{ours:?}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}

const ASSEMBLE_PLAY: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - file: {path: /root/frags, state: directory}
    - copy: {dest: /root/frags/10-a, content: "alpha\n"}
    - copy: {dest: /root/frags/20-b, content: beta}
    - copy: {dest: /root/frags/.hidden, content: "hidden\n"}
    - assemble:
        src: /root/frags
        dest: /root/assembled.conf
        delimiter: "-- part --"
        ignore_hidden: true
        mode: "0640"
      register: assembled
    - assemble:
        src: parts
        remote_src: false
        dest: /root/from-controller.conf
        delimiter: '# {{ "next" }}\t\x41'
        regexp: '^[0-9]'
        mode: "0600"
    - copy:
        dest: /root/assembled.json
        content: "{{ assembled.changed | to_json }}"
"#;

#[test]
fn assemble_joins_fragments_on_the_host_and_the_controller_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (ours_inv, theirs_inv) = side_by_side(&control, &fleet, "");
    let playbook = control.write("assemble.yml", ASSEMBLE_PLAY);
    // On the controller: an empty fragment, one without a last newline, a
    // vaulted-free plain one, and names the pattern leaves out.
    control.write("files/parts/1-empty", "");
    control.write("files/parts/2-open", "open");
    control.write("files/parts/3-closed", "closed\n");
    control.write("files/parts/skip-me", "skipped\n");
    control.write("files/parts/.4-hidden", "hidden\n");
    let apply = || {
        let mut cmd = control.nodeprov(&["apply", &playbook, "-i", &ours_inv]);
        cmd.env(
            "NODEPROV_ANSIBLE_PYTHON",
            newest_ansible_bin().join("python"),
        );
        Run::json(cmd)
    };
    let first = apply();
    assert_eq!(first.code, 0, "{first}");
    ansible_playbook(&control, &playbook, &theirs_inv);
    let read = |host: &support::sshd::SshHost, path: &str| {
        std::fs::read_to_string(host.host.path(path)).unwrap()
    };
    let ours = read(&fleet.hosts[0], "/root/assembled.conf");
    assert_eq!(ours, read(&fleet.hosts[1], "/root/assembled.conf"));
    assert_eq!(ours, "alpha\n-- part --\nbeta");
    let mode = |host: &support::sshd::SshHost| {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(host.host.path("/root/assembled.conf")).unwrap();
        meta.permissions().mode() & 0o7777
    };
    assert_eq!(mode(&fleet.hosts[0]), 0o640);
    assert_eq!(mode(&fleet.hosts[1]), 0o640);
    let joined = read(&fleet.hosts[0], "/root/from-controller.conf");
    assert_eq!(joined, read(&fleet.hosts[1], "/root/from-controller.conf"));
    assert_eq!(joined, "\n# next\tA\nopen\n# next\tA\nclosed\n");
    // Assembled again from the same fragments: nothing changes.
    let again = apply();
    assert_eq!(again.code, 0, "{again}");
    assert_eq!(read(&fleet.hosts[0], "/root/assembled.json"), "false");
    let statuses: Vec<&Value> = again.host(fleet.hosts[0].name())["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["status"])
        .collect();
    // The file of the registered `changed` is the one change.
    assert_eq!(
        statuses,
        ["ok", "ok", "ok", "ok", "ok", "ok", "changed"],
        "{again}"
    );
    drop(fleet);
    assert_machine_unchanged(&before);
}

const SET_STATS_PLAY: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - set_stats:
        data: {nodes: 1, names: [node], info: {a: 1}, label: x}
    - set_stats:
        data: {mine: 1, tags: [gpu]}
        per_host: true
    - set_stats:
        data: {mine: 2, tags: [ib], more: {k: v}}
        per_host: yes
    - set_stats:
        data: {label: last, nodes: 0.5}
        aggregate: false
    - set_stats:
        data: {nodes: 2, info: {b: 2}, names: mismatched}
      register: stats
    - copy:
        dest: /root/stats.json
        content: "{{ stats.ansible_stats | to_json }}"
"#;

/// `set_stats` on two hosts through both tools: the registered result, the
/// statistics per host and those of the whole run (added up over the
/// hosts, replaced without `aggregate`, a value of another type dropped).
#[test]
fn set_stats_gathers_what_ansible_gathers() {
    let before = machine_digest();
    let fleet = SshFleet::start(4);
    let control = Control::new(&fleet);
    let extra = "ansible_python_interpreter=/usr/bin/python3";
    let ours_inv = control.write(
        "ours.ini",
        &support::sshd::inventory(&fleet.hosts[..2], "root", extra),
    );
    let theirs_inv = control.write(
        "theirs.ini",
        &support::sshd::inventory(&fleet.hosts[2..], "root", extra),
    );
    let playbook = control.write("stats.yml", SET_STATS_PLAY);
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &ours_inv]));
    assert_eq!(run.code, 0, "{run}");
    let doc = ansible_playbook(&control, &playbook, &theirs_inv);
    let ours = &run.doc;
    assert_eq!(
        ours["global_custom_stats"], doc["global_custom_stats"],
        "{run}"
    );
    assert_eq!(
        ours["global_custom_stats"],
        serde_json::json!({"nodes": 0.5, "names": ["node", "node"], "info": {"a": 1, "b": 2}, "label": "last"})
    );
    let per_host = |doc: &Value, hosts: &[support::sshd::SshHost]| -> Vec<Value> {
        hosts
            .iter()
            .map(|h| doc["custom_stats"][h.name()].clone())
            .collect()
    };
    assert_eq!(
        per_host(ours, &fleet.hosts[..2]),
        per_host(&doc, &fleet.hosts[2..])
    );
    assert_eq!(
        per_host(ours, &fleet.hosts[..1])[0],
        serde_json::json!({"mine": 3, "tags": ["gpu", "ib"], "more": {"k": "v"}})
    );
    let registered = |host: &support::sshd::SshHost| {
        std::fs::read_to_string(host.host.path("/root/stats.json")).unwrap()
    };
    assert_eq!(registered(&fleet.hosts[0]), registered(&fleet.hosts[2]));
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// Jobs left running, read while they run (the first waits for a file a
/// later task writes, so that read cannot come too late), once they ended
/// (well and badly), removed, and read once removed; also as another user.
const ASYNC_PLAY: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - shell: while [ ! -e /root/release ]; do sleep 0.1; done; echo built; echo warned >&2
      async: 60
      poll: 0
      register: build
    - command: sh -c 'echo broken; exit 3'
      async: 60
      poll: 0
      register: broken
    - shell: id -un
      async: 60
      poll: 0
      become: true
      become_user: ops
      register: as_ops
    - file: {path: /root/made-by-a-job, state: directory, mode: "0750"}
      async: 60
      poll: 0
      register: native_job
    - ping: {data: from-a-job}
      async: 60
      poll: 0
      register: module_job
    - async_status: {jid: "{{ build.ansible_job_id }}"}
      register: early
    - copy: {dest: /root/release, content: ""}
    - async_status: {jid: "{{ build.ansible_job_id }}"}
      register: job
      until: job.finished
      retries: 30
      delay: 1
    - async_status: {jid: "{{ broken.ansible_job_id }}"}
      register: failing
      until: failing.finished
      retries: 30
      delay: 1
      ignore_errors: true
    - async_status: {jid: "{{ as_ops.ansible_job_id }}"}
      register: ops
      until: ops.finished
      retries: 30
      delay: 1
      become: true
      become_user: ops
    - async_status: {jid: "{{ native_job.ansible_job_id }}"}
      register: native
      until: native.finished
      retries: 30
      delay: 1
    - async_status: {jid: "{{ module_job.ansible_job_id }}"}
      register: module
      until: module.finished
      retries: 30
      delay: 1
    - async_status: {jid: "{{ build.ansible_job_id }}", mode: cleanup}
      register: cleaned
    - async_status: {jid: "{{ build.ansible_job_id }}"}
      register: gone
      ignore_errors: true
    - copy:
        dest: /root/async.json
        content: "{{ {'build': build, 'broken': broken, 'early': early, 'job': job, 'failing': failing,
                      'ops': ops, 'cleaned': cleaned, 'gone': gone, 'native_job': native_job,
                      'module_job': module_job, 'native': native, 'module': module} | to_json }}"
"#;

#[test]
fn async_status_reads_jobs_left_running_as_ansible_does() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (ours_inv, theirs_inv) = side_by_side(&control, &fleet, "");
    let playbook = control.write("async.yml", ASYNC_PLAY);
    // Check mode starts no job, and reads none: what a job would return is
    // unknown until it ran. A module's job is judged as the module is.
    let nodeprov = |cmd: &str| {
        let mut cmd = control.nodeprov(&[cmd, &playbook, "-i", &ours_inv]);
        cmd.env(
            "NODEPROV_ANSIBLE_PYTHON",
            newest_ansible_bin().join("python"),
        );
        Run::json(cmd)
    };
    let check = nodeprov("check");
    assert_eq!(check.code, 2, "{check}");
    let statuses: Vec<&str> = check.doc["hosts"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses[..5],
        ["unknown", "unknown", "unknown", "drift", "ok"],
        "{check}"
    );
    let tasks = check.doc["hosts"][0]["tasks"].as_array().unwrap();
    let readers: Vec<_> = tasks
        .iter()
        .filter(|t| t["module"] == "async_status")
        .collect();
    assert_eq!(readers.len(), 8, "{check}");
    assert!(readers.iter().all(|t| t["status"] == "unknown"), "{check}");
    assert!(!fleet.hosts[0].host.path("/root/.ansible_async").exists());
    let run = nodeprov("apply");
    assert_eq!(run.code, 0, "{run}");
    ansible_playbook(&control, &playbook, &theirs_inv);
    // Job ids are drawn at random, and how many attempts a job takes
    // depends on the machine; the rest must be what Ansible registers.
    let keys = [
        "started",
        "finished",
        "results_file",
        "erased",
        "rc",
        "stdout",
        "stdout_lines",
        "stderr",
        "stderr_lines",
        "failed",
        "msg",
        "ping",
    ];
    let results = |host: &support::sshd::SshHost| -> Value {
        let text = std::fs::read_to_string(host.host.path("/root/async.json")).unwrap();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let mut kept = serde_json::Map::new();
        for (task, r) in doc.as_object().unwrap() {
            let jid = r["ansible_job_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{task}: {r}"));
            assert!(jid.starts_with('j') && jid.contains('.'), "{task}: {jid}");
            let shown: serde_json::Map<String, Value> = keys
                .iter()
                .filter_map(|k| {
                    let v = r.get(*k)?.to_string().replace(jid, "JID");
                    Some((k.to_string(), serde_json::from_str(&v).unwrap()))
                })
                .collect();
            kept.insert(task.clone(), Value::Object(shown));
        }
        Value::Object(kept)
    };
    let (ours, theirs) = (results(&fleet.hosts[0]), results(&fleet.hosts[1]));
    assert_eq!(
        ours, theirs,
        "nodeprov:\n{ours:#}\nansible-playbook:\n{theirs:#}"
    );
    assert_eq!(theirs["job"]["stdout"], "built", "{theirs:#}");
    assert_eq!(theirs["early"]["finished"], false, "{theirs:#}");
    assert_eq!(theirs["ops"]["stdout"], "ops", "{theirs:#}");
    assert_eq!(
        theirs["ops"]["results_file"],
        "/run/home/ops/.ansible_async/JID"
    );
    assert_eq!(theirs["gone"]["msg"], "could not find job", "{theirs:#}");
    let made = std::fs::metadata(fleet.hosts[0].host.path("/root/made-by-a-job")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&made.permissions()) & 0o777,
        0o750
    );
    assert_eq!(theirs["module"]["ping"], "from-a-job", "{theirs:#}");
    // Reading a job changes nothing on the host: nodeprov reports it ok,
    // where Ansible passes on the job's own `changed`.
    let tasks = run.doc["hosts"][0]["tasks"].as_array().unwrap();
    let status = |n: usize| tasks[n]["status"].as_str().unwrap().to_string();
    assert_eq!(
        [status(0), status(5), status(7)],
        ["changed", "ok", "ok"],
        "{run}"
    );
    // Records stay private to their user (Ansible leaves the folder 0755).
    let records = fleet.hosts[0].host.path("/root/.ansible_async");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&records).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    drop(fleet);
    assert_machine_unchanged(&before);
}

/// Where the task's files are found: copies of one name in every folder
/// Ansible searches, some names in only a few, for `copy`, `template`,
/// `include_vars` and `script` in a role (its main file and a file it
/// includes from a subfolder) and at play level.
const FOUND_WHERE: &[&str] = &[
    "roles/r/files",
    "roles/r/templates",
    "roles/r/vars",
    "roles/r/tasks",
    "roles/r/tasks/sub",
    "roles/r/tasks/sub/files",
    "roles/r",
    "files",
    "templates",
    "vars",
    "",
];

const FOUND_ROLE: &str = r#"
- copy: {src: every.txt, dest: /root/found/role-copy}
- template: {src: every.txt, dest: /root/found/role-template}
- include_vars: every.yml
- copy: {content: "{{ where }}", dest: /root/found/role-vars}
- copy: {src: tasks-only.txt, dest: /root/found/role-tasks-only}
- template: {src: play-only.txt, dest: /root/found/role-play-only}
- include_vars: "{{ ansible_os_family }}.yml"
- copy: {content: "{{ where }}", dest: /root/found/role-os-vars}
- script: every.sh
  register: ran
- copy: {content: "{{ ran.stdout }}", dest: /root/found/role-script}
- include_tasks: sub/more.yml
"#;

const FOUND_SUB: &str = r#"
- copy: {src: every.txt, dest: /root/found/sub-copy}
- copy: {src: sub-only.txt, dest: /root/found/sub-only}
"#;

const FOUND_PLAY: &str = r#"
- hosts: all
  gather_facts: true
  pre_tasks:
    - file: {path: /root/found, state: directory}
  roles: [r]
  tasks:
    - copy: {src: every.txt, dest: /root/found/play-copy}
    - template: {src: every.txt, dest: /root/found/play-template}
    - include_vars: every.yml
    - copy: {content: "{{ where }}", dest: /root/found/play-vars}
"#;

#[test]
fn a_tasks_files_are_found_where_ansible_finds_them() {
    let before = machine_digest();
    let fleet = SshFleet::start(2);
    let control = Control::new(&fleet);
    let (ours_inv, theirs_inv) = side_by_side(&control, &fleet, "ansible_ssh_use_tty=false");
    for dir in FOUND_WHERE {
        let at = |name: &str| match dir.is_empty() {
            true => name.to_string(),
            false => format!("{dir}/{name}"),
        };
        std::fs::create_dir_all(control.path(dir)).unwrap();
        control.write(&at("every.txt"), &format!("{dir}\n"));
        control.write(&at("every.yml"), &format!("where: '{dir}'\n"));
        control.write(&at("Debian.yml"), &format!("where: 'os {dir}'\n"));
        control.write(&at("every.sh"), &format!("#!/bin/sh\necho '{dir}'\n"));
    }
    control.write("roles/r/tasks/tasks-only.txt", "tasks\n");
    control.write("files/play-only.txt", "play files\n");
    control.write("templates/play-only.txt", "play templates\n");
    control.write("roles/r/tasks/sub/files/sub-only.txt", "sub files\n");
    control.write("roles/r/tasks/main.yml", FOUND_ROLE);
    control.write("roles/r/tasks/sub/more.yml", FOUND_SUB);
    let playbook = control.write("found.yml", FOUND_PLAY);
    let run = Run::json(control.nodeprov(&["apply", &playbook, "-i", &ours_inv]));
    assert_eq!(run.code, 0, "{run}");
    ansible_playbook(&control, &playbook, &theirs_inv);
    let found = |host: &support::sshd::SshHost| -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = std::fs::read_dir(host.host.path("/root/found"))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let text = std::fs::read_to_string(e.path()).unwrap();
                (e.file_name().to_string_lossy().into_owned(), text)
            })
            .collect();
        found.sort();
        found
    };
    let (ours, theirs) = (found(&fleet.hosts[0]), found(&fleet.hosts[1]));
    assert_eq!(ours, theirs);
    let theirs: std::collections::BTreeMap<_, _> = theirs.into_iter().collect();
    assert_eq!(theirs["role-copy"], "roles/r/files\n");
    assert_eq!(theirs["role-template"], "roles/r/templates\n");
    assert_eq!(theirs["role-vars"], "roles/r/vars");
    assert_eq!(theirs["role-os-vars"], "os roles/r/vars");
    assert_eq!(theirs.len(), 12, "{theirs:?}");
    drop(fleet);
    assert_machine_unchanged(&before);
}
