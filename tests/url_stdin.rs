//! URLs over real SSH: `unarchive` from a URL, with curl and with wget on a
//! host without curl, and `get_url` with wget hand the URL to the tool on
//! its standard input, so a token in the query is on neither command line
//! and in no report, while the requests still carry it to the server.

mod support;

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;

use support::control::{Control, Run};
use support::http::{argv_recorder, tarball, Server};
use support::sshd::{SshFleet, SshHost};
use support::{assert_machine_unchanged, machine_digest};

const SECRETS: &[&str] = &[
    "unarchive-curl-token-1",
    "unarchive-wget-token-2",
    "get-url-wget-token-3",
];

/// Run while the host has curl.
const WITH_CURL: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - unarchive:
        src: "{base}/pkg.tar.gz?token=unarchive-curl-token-1"
        dest: /root/np/curl
        remote_src: true
"#;

/// Run once it has only wget.
const WITH_WGET: &str = r#"
- hosts: all
  gather_facts: false
  tasks:
    - unarchive:
        src: "{base}/pkg.tar.gz?token=unarchive-wget-token-2"
        dest: /root/np/wget
        remote_src: true
    - get_url:
        url: "{base}/files/c.txt?sig=get-url-wget-token-3"
        dest: /root/np/c.txt
"#;

#[test]
fn a_token_in_a_url_reaches_the_server_but_no_command_line_and_no_report() {
    let before = machine_digest();
    let archive = tarball();
    let server = Server::start(move |req| match req.starts_with("GET /pkg.tar.gz") {
        true => ("200 OK", archive.clone()),
        false => ("200 OK", b"fetched\n".to_vec()),
    });
    // An address no other SSH test starts a host on, so it runs beside them.
    let mut host = SshHost::start_on(Ipv4Addr::new(127, 0, 94, 1));
    // The host's sessions find the recording curl and wget first, and every
    // other tool through links: removing the curl link leaves the host
    // without curl.
    let bin = host.host.path("/root/bin");
    let tools = host.host.path("/root/tools");
    for dir in [&bin, &tools] {
        std::fs::create_dir_all(dir).unwrap();
    }
    for dir in ["/usr/local/bin", "/usr/bin", "/usr/sbin"] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if name != "curl" && name != "wget" && !tools.join(&name).exists() {
                std::os::unix::fs::symlink(entry.path(), tools.join(&name)).unwrap();
            }
        }
    }
    for tool in ["curl", "wget"] {
        std::fs::write(bin.join(tool), argv_recorder(tool)).unwrap();
        std::fs::set_permissions(bin.join(tool), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for dest in ["curl", "wget"] {
        std::fs::create_dir_all(host.host.path(&format!("/root/np/{dest}"))).unwrap();
    }
    host.reconfigure("SetEnv PATH=/root/bin:/root/tools\n");
    let fleet = SshFleet { hosts: vec![host] };
    let control = Control::new(&fleet);
    let inventory = control.write("inventory.ini", &fleet.inventory("root", ""));

    for (name, play) in [("curl", WITH_CURL), ("wget", WITH_WGET)] {
        if name == "wget" {
            std::fs::remove_file(bin.join("curl")).unwrap();
        }
        let playbook = control.write(
            &format!("{name}.yml"),
            &play.replace("{base}", &server.base),
        );
        let reports = control.path(name).display().to_string();
        let run = Run::json(
            control.nodeprov(&["apply", &playbook, "-i", &inventory, "--report", &reports]),
        );
        assert_eq!(run.code, 0, "{run}");
        let mut outputs = vec![run.stdout.clone(), run.stderr.clone()];
        for f in ["report.json", "junit.xml", "report.html"] {
            outputs.push(control.read(&format!("{name}/{f}")));
        }
        for text in &outputs {
            for secret in SECRETS {
                assert!(
                    !text.contains(secret),
                    "{name}: a report shows {secret}:\n{text}"
                );
            }
        }
        assert!(
            run.stdout.contains("/pkg.tar.gz?…"),
            "the URL is shown cut: {run}"
        );
    }

    let host = &fleet.hosts[0].host;
    for dest in ["curl", "wget"] {
        let readme = host.path(&format!("/root/np/{dest}/pkg-1.0/README"));
        assert_eq!(
            std::fs::read_to_string(readme).unwrap_or_default(),
            "pkg\n",
            "{dest}"
        );
    }
    let fetched = std::fs::read_to_string(host.path("/root/np/c.txt")).unwrap_or_default();
    assert_eq!(fetched, "fetched\n");
    for line in [
        "GET /pkg.tar.gz?token=unarchive-curl-token-1 ",
        "GET /pkg.tar.gz?token=unarchive-wget-token-2 ",
        "GET /files/c.txt?sig=get-url-wget-token-3 ",
    ] {
        assert!(
            !server.received(line).is_empty(),
            "{line}: {:?}",
            server.requests
        );
    }
    for (tool, calls) in [("curl", 1), ("wget", 2)] {
        let argv =
            std::fs::read_to_string(host.path(&format!("/root/{tool}-argv"))).unwrap_or_default();
        assert_eq!(argv.lines().count(), calls, "{tool} ran: {argv}");
        for secret in SECRETS {
            assert!(
                !argv.contains(secret),
                "{tool}'s arguments show {secret}: {argv}"
            );
        }
        assert!(
            !argv.contains("127.0.0.1"),
            "the URL is on {tool}'s stdin: {argv}"
        );
    }
    drop(fleet);
    assert_machine_unchanged(&before);
}
