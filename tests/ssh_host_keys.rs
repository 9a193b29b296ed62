//! The real binary's host key checks against a real sshd: what each kind of
//! known_hosts line and `StrictHostKeyChecking` value lets through, and
//! that a refused host is never recorded.

mod support;

use support::control::{Control, Run};
use support::sshd::{SshFleet, SshHost};

const PLAYBOOK: &str = "
- hosts: all
  gather_facts: false
  tasks:
    - command: id -un
";

/// `nodeprov apply` of [`PLAYBOOK`] on `host` as root, as JSON.
fn apply(control: &Control, host: &SshHost, extra: &[&str]) -> Run {
    let playbook = control.write("play.yml", PLAYBOOK);
    let inventory = control.write(
        "inventory.ini",
        &support::sshd::inventory(std::slice::from_ref(host), "root", ""),
    );
    let mut args = vec!["apply", playbook.as_str(), "-i", inventory.as_str()];
    args.extend(extra);
    Run::json(control.nodeprov(&args))
}

/// The host's key type and base64 key, as its known_hosts line has them.
fn key_of(host: &SshHost) -> String {
    let line = host.known_hosts_line();
    line.split_once(' ').unwrap().1.to_string()
}

fn reached(run: &Run, host: &SshHost) -> bool {
    run.host(host.name())["unreachable"].is_null()
}

#[test]
fn a_revoked_host_key_is_refused_even_when_listed_or_with_accept_new() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let file = control.path("known_hosts").display().to_string();
    let revoked = format!("@revoked * {}\n", key_of(host));
    for text in [format!("{}\n{revoked}", host.known_hosts_line()), revoked] {
        control.write("known_hosts", &text);
        let run = apply(&control, host, &["--accept-new-host-keys"]);
        assert_eq!(run.code, 4, "{run}");
        let msg = run.unreachable(host.name());
        let line = text.lines().count();
        let named = format!(
            "{} ({}:22): its ssh-ed25519 host key SHA256:",
            host.name(),
            host.ip()
        );
        assert!(
            msg.contains(&named) && msg.contains(&format!("is revoked in {file}:{line}")),
            "{msg}"
        );
        assert_eq!(control.read("known_hosts"), text, "nothing is recorded");
    }
}

#[test]
fn a_negated_pattern_takes_its_host_out_of_the_line() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let (ip, key) = (host.ip(), key_of(host));

    let negated = format!("{ip},!{ip} {key}\n");
    control.write("known_hosts", &negated);
    let run = apply(&control, host, &[]);
    assert_eq!(run.code, 4, "{run}");
    let msg = run.unreachable(host.name());
    assert!(msg.contains("host key is not known"), "{msg}");
    assert_eq!(control.read("known_hosts"), negated);

    // The same line with its wildcard and another host negated trusts it.
    control.write("known_hosts", &format!("127.0.1.*,!127.0.1.255 {key}\n"));
    let run = apply(&control, host, &[]);
    assert!(reached(&run, host), "{run}");
    assert_eq!(run.code, 0, "{run}");
}

#[test]
fn a_host_known_only_through_a_cert_authority_is_refused_and_told_why() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    let file = control.path("known_hosts").display().to_string();
    let text = format!("@cert-authority {} {}\n", host.ip(), key_of(host));
    control.write("known_hosts", &text);
    let run = apply(&control, host, &["--accept-new-host-keys"]);
    assert_eq!(run.code, 4, "{run}");
    let msg = run.unreachable(host.name());
    assert!(
        msg.contains(&format!(
            "known_hosts {file}:1: @cert-authority lines are not supported; \
             nodeprov checks plain host keys"
        )),
        "{msg}"
    );
    assert_eq!(control.read("known_hosts"), text, "nothing is recorded");
}

#[test]
fn strict_host_key_checking_no_is_refused_unless_accept_new_is_passed() {
    let fleet = SshFleet::start(1);
    let host = &fleet.hosts[0];
    let control = Control::new(&fleet);
    control.write("known_hosts", "");
    let config = control.write("ssh_config", "Host *\n    StrictHostKeyChecking no\n");
    let run = apply(&control, host, &["--ssh-config", &config]);
    assert_eq!(run.code, 4, "{run}");
    let msg = run.unreachable(host.name());
    assert!(
        msg.contains(&format!(
            "StrictHostKeyChecking no in {config}:2 is not honoured: nodeprov never connects \
             to an unverified host; use accept-new or --accept-new-host-keys"
        )),
        "{msg}"
    );
    assert_eq!(control.read("known_hosts"), "", "nothing is recorded");

    let run = apply(
        &control,
        host,
        &["--ssh-config", &config, "--accept-new-host-keys"],
    );
    assert_eq!(run.code, 0, "{run}");
    assert_eq!(
        control.read("known_hosts").trim_end(),
        host.known_hosts_line(),
        "accepted as new and recorded"
    );
}
