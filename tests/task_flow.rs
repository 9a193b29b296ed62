//! Task-flow keywords (`until`/`retries`/`delay`, …) and the modules that
//! steer a run (`meta`, `fail`, `assert`, `setup`) through the real
//! binary with `-c local` inside an isolated host.

mod support;

use support::{assert_machine_unchanged, machine_digest, run_json, IsolatedHost};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");

/// Runs `cmd` (apply or check) on a playbook written into the host's /root.
fn run(host: &IsolatedHost, cmd: &str, playbook: &str) -> (i32, serde_json::Value) {
    std::fs::write(host.path("/root/flow.yml"), playbook).unwrap();
    let argv = [
        BIN,
        cmd,
        "/root/flow.yml",
        "-c",
        "local",
        "--format",
        "json",
    ];
    run_json(host, &argv)
}

fn tasks(doc: &serde_json::Value) -> &Vec<serde_json::Value> {
    doc["hosts"][0]["tasks"].as_array().unwrap()
}

/// Counts its runs in /root/n and prints the count.
const COUNTER: &str =
    "n=$(cat /root/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /root/n; echo $n";

fn retried(until: &str) -> String {
    format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: '{COUNTER}'\n      register: r\n      until: {until}\n      retries: 4\n      delay: 1\n    - copy: {{dest: /root/attempts, content: \"{{{{ r.attempts }}}}\"}}\n"
    )
}

#[test]
fn until_retries_a_command_until_its_condition_holds() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let (code, doc) = run(&host, "apply", &retried("r.stdout == '3'"));
    assert_eq!(code, 0, "{doc:#}");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(read("/root/n"), "3\n");
    assert_eq!(read("/root/attempts"), "3");
    assert_eq!(tasks(&doc)[0]["notes"][0], "3 attempts", "{doc:#}");
    assert_machine_unchanged(&before);
}

#[test]
fn until_in_a_loop_retries_each_item_until_its_own_condition_holds() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let counter = COUNTER.replace("/root/n", "/root/n-{{ item }}");
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: '{counter}'\n      register: r\n      until: r.stdout == '2'\n      retries: 3\n      delay: 0\n      loop: [x, y]\n    - copy: {{dest: /root/attempts, content: \"{{{{ r.results | map(attribute='attempts') | join(',') }}}}\"}}\n"
    );
    let (code, doc) = run(&host, "apply", &playbook);
    assert_eq!(code, 0, "{doc:#}");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(read("/root/n-x"), "2\n");
    assert_eq!(read("/root/n-y"), "2\n");
    assert_eq!(read("/root/attempts"), "2,2");
    assert_machine_unchanged(&before);
}

#[test]
fn until_never_met_fails_after_every_attempt_and_check_mode_skips_it() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let (code, doc) = run(&host, "check", &retried("r.stdout == 'never'"));
    assert_eq!(tasks(&doc)[0]["status"], "skipped", "{doc:#}");
    assert!(!host.path("/root/n").exists(), "check mode ran the command");
    assert!(code == 0 || code == 2, "{doc:#}");

    let (code, doc) = run(&host, "apply", &retried("r.stdout == 'never'"));
    assert_ne!(code, 0, "{doc:#}");
    let t = &tasks(&doc)[0];
    assert_eq!(t["status"], "failed", "{doc:#}");
    let msg = t["message"].as_str().unwrap();
    assert!(
        msg.starts_with("until: still false after 5 attempt(s)"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(host.path("/root/n")).unwrap(),
        "5\n"
    );
    assert!(!host.path("/root/attempts").exists());
    assert_machine_unchanged(&before);
}

#[test]
fn a_command_says_when_it_ran_by_the_hosts_clock() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: sleep 1\n      register: r\n    - command: 'true'\n      args: {creates: /root}\n      register: s\n    - debug:\n        msg: \"{{ [r.start, r.end, r.delta, s.start, s.delta] | to_json }}\"\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    let note = tasks(&doc)[2]["notes"][0].as_str().unwrap();
    let shown: Vec<serde_json::Value> =
        serde_json::from_str(note.strip_prefix("msg: ").unwrap()).unwrap();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let (start, end, delta) = (text(&shown[0]), text(&shown[1]), text(&shown[2]));
    // Python's str of a datetime and of a timedelta.
    let datetime = regex::Regex::new(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}$").unwrap();
    assert!(
        datetime.is_match(&start) && datetime.is_match(&end),
        "{shown:?}"
    );
    assert!(start < end, "{shown:?}");
    assert!(
        regex::Regex::new(r"^0:00:0[1-5]\.\d{6}$")
            .unwrap()
            .is_match(&delta),
        "{shown:?}"
    );
    // A command `creates` skipped never ran: Ansible's keys, unset.
    assert_eq!(
        shown[3..],
        [serde_json::Value::Null, serde_json::Value::Null]
    );
    assert_machine_unchanged(&before);
}

#[test]
fn a_block_failure_is_rescued_and_always_runs() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - block:\n        - name: breaks\n          shell: echo partial > /root/body; exit 3\n        - copy: {dest: /root/never, content: x}\n      rescue:\n        - copy: {dest: /root/rescued, content: \"{{ ansible_failed_task.name }} {{ ansible_failed_result.rc }}\"}\n      always:\n        - copy: {dest: /root/always, content: done}\n    - copy: {dest: /root/after, content: after}\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "a rescued failure does not fail the host: {doc:#}");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(read("/root/body"), "partial\n");
    assert_eq!(read("/root/rescued"), "breaks 3");
    assert_eq!(read("/root/always"), "done");
    assert_eq!(read("/root/after"), "after");
    assert!(!host.path("/root/never").exists());
    let first = &tasks(&doc)[0];
    assert_eq!(first["status"], "failed", "{doc:#}");
    assert_eq!(first["notes"][0], "rescued", "{doc:#}");
    assert_machine_unchanged(&before);
}

#[test]
fn meta_flush_handlers_runs_them_in_place_and_end_host_stops_without_failing() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /root/conf, content: v1}\n      notify: reload\n    - meta: flush_handlers\n    - shell: cat /root/reloaded > /root/seen\n    - meta: end_host\n    - copy: {dest: /root/never, content: x}\n  handlers:\n    - name: reload\n      shell: echo reloaded >> /root/reloaded\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(
        read("/root/seen"),
        "reloaded\n",
        "the handler ran before the next task"
    );
    assert_eq!(read("/root/reloaded"), "reloaded\n", "and only once");
    assert!(!host.path("/root/never").exists());
    assert_machine_unchanged(&before);
}

#[test]
fn a_fire_and_forget_command_is_left_running_and_the_play_goes_on() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo running > /root/job; sleep 30; echo late > /root/late\n      async: 60\n      poll: 0\n      register: job\n    - shell: for i in 1 2 3 4 5 6 7 8 9 10; do [ -s /root/job ] && break; sleep 0.5; done; cat /root/job\n      register: seen\n      changed_when: false\n    - copy: {dest: /root/result, content: \"{{ job.started }} {{ job.finished }} {{ seen.stdout }}\"}\n";
    let started = std::time::Instant::now();
    let (code, doc) = run(&host, "apply", playbook);
    assert!(
        started.elapsed().as_secs() < 20,
        "the play waited for the job"
    );
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(tasks(&doc)[0]["status"], "changed", "{doc:#}");
    let result = std::fs::read_to_string(host.path("/root/result")).unwrap();
    assert_eq!(result, "True False running");
    assert!(!host.path("/root/late").exists());
    assert_machine_unchanged(&before);
}

/// A job that `async` ends leaves nothing behind: its script, which holds
/// the task's `environment:` values, is removed although the job was killed.
#[test]
fn a_fire_and_forget_job_killed_by_its_limit_leaves_no_script() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo \"$JOB_TOKEN\" > /root/job; sleep 60\n      async: 1\n      poll: 0\n      environment: {JOB_TOKEN: env-token-5129}\n    - shell: for i in $(seq 40); do grep -rqs env-token /tmp || break; sleep 0.25; done\n      changed_when: false\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    let holding_token = || -> Vec<std::path::PathBuf> {
        let mut found = Vec::new();
        for dir in ["/tmp", "/root"] {
            for entry in std::fs::read_dir(host.path(dir)).unwrap() {
                let path = entry.unwrap().path();
                let text = std::fs::read(&path).unwrap_or_default();
                if String::from_utf8_lossy(&text).contains("env-token-5129")
                    && !path.ends_with("job")
                    && !path.ends_with("flow.yml")
                {
                    found.push(path);
                }
            }
        }
        found
    };
    // The host's processes end with the run: the second task waited (10 s
    // at most) for the job, which `timeout` stops after 1 s.
    assert_eq!(
        std::fs::read_to_string(host.path("/root/job")).unwrap(),
        "env-token-5129\n",
        "the job ran with its environment"
    );
    assert!(
        holding_token().is_empty(),
        "left behind: {:?}",
        holding_token()
    );
    assert_machine_unchanged(&before);
}

#[test]
fn copy_with_follow_writes_the_file_its_link_points_to() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::create_dir_all(host.path("/root/boot/grub2")).unwrap();
    std::fs::write(host.path("/root/boot/grub2/grub.cfg"), "old\n").unwrap();
    std::os::unix::fs::symlink("boot/grub2/grub.cfg", host.path("/root/grub2.cfg")).unwrap();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {dest: /root/grub2.cfg, content: \"new\\n\", follow: true}\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(tasks(&doc)[0]["status"], "changed", "{doc:#}");
    let target = std::fs::read_to_string(host.path("/root/boot/grub2/grub.cfg")).unwrap();
    assert_eq!(target, "new\n");
    let link = std::fs::symlink_metadata(host.path("/root/grub2.cfg")).unwrap();
    assert!(link.file_type().is_symlink(), "the link stays a link");
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(tasks(&doc)[0]["status"], "ok", "{doc:#}");
    assert_machine_unchanged(&before);
}

#[test]
fn a_task_running_past_its_timeout_fails_saying_so() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo started > /root/started; sleep 30; echo late > /root/late\n      timeout: 1\n    - shell: echo quick > /root/quick\n      timeout: 20\n";
    let started = std::time::Instant::now();
    let (code, doc) = run(&host, "apply", playbook);
    assert!(
        started.elapsed().as_secs() < 20,
        "the step was not cut short"
    );
    assert_ne!(code, 0, "{doc:#}");
    let t = &tasks(&doc)[0];
    assert_eq!(t["status"], "failed", "{doc:#}");
    assert_eq!(t["message"], "Timed out after 1 second", "{doc:#}");
    assert!(host.path("/root/started").exists());
    assert!(!host.path("/root/late").exists());
    assert!(
        !host.path("/root/quick").exists(),
        "the host stops at the failure"
    );
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo quick > /root/quick\n      timeout: 20\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    assert!(host.path("/root/quick").exists());
    assert_machine_unchanged(&before);
}

#[test]
fn a_task_delegated_to_localhost_registers_what_the_controller_said() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo from-controller\n      register: r\n      changed_when: false\n      delegate_to: localhost\n    - copy: {dest: /root/delegated, content: \"{{ r.stdout }}\"}\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    let read = std::fs::read_to_string(host.path("/root/delegated")).unwrap();
    assert_eq!(read, "from-controller");
    assert_machine_unchanged(&before);
}

#[test]
fn a_run_once_task_runs_once_for_the_batch_and_shares_its_result() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    std::fs::write(host.path("/root/hosts.ini"), "node-a\nnode-b\nnode-c\n").unwrap();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: echo {{ inventory_hostname }} >> /root/once; echo token-$(wc -l < /root/once)\n      register: t\n      run_once: true\n    - shell: echo {{ inventory_hostname }} {{ t.stdout }} >> /root/joined\n";
    std::fs::write(host.path("/root/flow.yml"), playbook).unwrap();
    let argv = [
        BIN,
        "apply",
        "/root/flow.yml",
        "-i",
        "/root/hosts.ini",
        "-c",
        "local",
        "--format",
        "json",
    ];
    let (code, doc) = run_json(&host, &argv);
    assert_eq!(code, 0, "{doc:#}");
    let read = |p: &str| std::fs::read_to_string(host.path(p)).unwrap();
    assert_eq!(read("/root/once"), "node-a\n");
    let mut joined: Vec<String> = read("/root/joined").lines().map(String::from).collect();
    joined.sort();
    assert_eq!(
        joined,
        ["node-a token-1", "node-b token-1", "node-c token-1"]
    );
    assert_machine_unchanged(&before);
}

#[test]
fn a_command_skipped_by_creates_registers_its_result_for_the_next_task() {
    let host = IsolatedHost::new();
    std::fs::write(host.path("/root/done"), "").unwrap();
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: {cmd: 'touch /root/ran', creates: /root/done}\n      register: r\n    - copy: {dest: /root/seen, content: \"{{ 'ran' if r.changed else 'kept' }}\"}\n";
    let (code, doc) = run(&host, "apply", playbook);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(tasks(&doc)[0]["notes"][0], "skipped: /root/done exists");
    assert!(!host.path("/root/ran").exists());
    assert_eq!(
        std::fs::read_to_string(host.path("/root/seen")).unwrap(),
        "kept"
    );
}

const REPORTED: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: nothing
      meta: noop
    - name: some facts
      setup:
        filter: ["ansible_hostname", "ansible_distribution*"]
      register: some
    - name: kept
      debug:
        msg: "{{ some.ansible_facts.keys() | reject('match', 'ansible_distribution') | join(',') }} and {{ some.ansible_facts.ansible_distribution is defined }}"
    - name: said
      assert:
        that:
          - some.ansible_facts.ansible_hostname == ansible_hostname
          - some.ansible_facts.ansible_kernel is undefined
        success_msg: hostname kept
    - name: silent
      assert:
        that: ["true"]
        quiet: true
    - name: refuted
      assert:
        that: ["1 == 2"]
        fail_msg: one is not two
      ignore_errors: true
    - name: not now
      fail:
        msg: not this one
      when: false
    - name: ended
      meta: end_play
    - name: after the end
      fail:
        msg: never
- name: second
  hosts: all
  gather_facts: false
  tasks:
    - name: stops
      fail:
        msg: stopped on purpose
    - name: after the failure
      debug:
        msg: reached
"#;

/// A task of the report: its name, status, message and notes, in order.
fn reported(play: &serde_json::Value) -> Vec<(String, String, String, Vec<String>)> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let tasks = play["tasks"].as_array().unwrap();
    tasks
        .iter()
        .map(|t| {
            let notes = t["notes"]
                .as_array()
                .map_or(vec![], |n| n.iter().map(text).collect());
            (
                text(&t["task"]),
                text(&t["status"]),
                text(&t["message"]),
                notes,
            )
        })
        .collect()
}

/// `meta: noop` and `end_play`, `setup` with `filter`, `assert` with
/// `success_msg`, `quiet` and `fail_msg`, and `fail` with `msg`, as the
/// JSON report shows them: the play ends at `end_play`, the next play
/// still runs, and a failure stops the host in apply (a check goes on).
#[test]
fn meta_setup_assert_and_fail_report_their_statuses_and_messages() {
    let before = machine_digest();
    let host = IsolatedHost::new();
    let row = |task: &str, status: &str, message: &str, notes: &[&str]| {
        let notes = notes.iter().map(|n| n.to_string()).collect();
        (
            task.to_string(),
            status.to_string(),
            message.to_string(),
            notes,
        )
    };
    let kept = "msg: ansible_hostname and True";
    let first = [
        row("nothing", "ok", "", &["nothing to do"]),
        row("some facts", "ok", "", &[]),
        row("kept", "ok", "", &[kept]),
        row("said", "ok", "", &["hostname kept"]),
        row("silent", "ok", "", &[]),
        row("refuted", "failed", "one is not two", &[]),
        row("not now", "skipped", "", &[]),
        row("ended", "ok", "", &["the play ends here"]),
    ];
    for cmd in ["check", "apply"] {
        let (code, doc) = run(&host, cmd, REPORTED);
        assert_eq!(code, 4, "{doc:#}");
        let plays = doc["hosts"].as_array().unwrap();
        assert_eq!(reported(&plays[0]), first, "{cmd}: {doc:#}");
        assert_eq!(plays[0]["tasks"][5]["ignored"], true, "{doc:#}");
        assert_eq!(plays[0]["failed"], false, "{doc:#}");
        let mut second = vec![row("stops", "failed", "stopped on purpose", &[])];
        if cmd == "check" {
            second.push(row("after the failure", "ok", "", &["msg: reached"]));
        }
        assert_eq!(reported(&plays[1]), second, "{cmd}: {doc:#}");
        assert_eq!(plays[1]["failed"], true, "{doc:#}");
    }
    assert_machine_unchanged(&before);
}
