//! Runs scripts on this machine with `/bin/sh`.

use std::io::Write;
use std::process::{Command, Stdio};

use super::{Output, Script, Transport, TransportError};
use crate::base::escalation::{sudo_options, Prompt};

#[derive(Default)]
pub struct LocalTransport;

impl Transport for LocalTransport {
    fn run(&mut self, script: &Script) -> Result<Output, TransportError> {
        let mut cmd = match &script.become_user {
            Some(user) if !is_current_user(user) => {
                // No prompt can be answered here: the script is on stdin.
                let flags = script.become_flags.as_deref();
                let mut c = Command::new("sudo");
                c.args(sudo_options(flags, Prompt::Refused))
                    .args(["-u", user, "--", "/bin/sh", "-s"]);
                c
            }
            _ => {
                let mut c = Command::new("/bin/sh");
                c.arg("-s");
                c
            }
        };
        crate::base::child_env::without_own_settings(&mut cmd)
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| TransportError::Io(format!("cannot start /bin/sh: {e}")))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // Written from a thread so a script that prints a lot before reading
        // all of its input cannot deadlock against us; scoped, so it writes
        // the script itself rather than a copy.
        let out = std::thread::scope(|s| {
            s.spawn(move || stdin.write_all(script.body.as_bytes()));
            child.wait_with_output()
        })
        .map_err(|e| TransportError::Io(format!("waiting for /bin/sh: {e}")))?;
        Ok(Output {
            status: out.status.code().unwrap_or(-1),
            stdout: out.stdout,
            stderr: out.stderr,
        })
    }
}

fn is_current_user(user: &str) -> bool {
    std::env::var("USER").is_ok_and(|u| u == user) || (user == "root" && is_root())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|uid| uid == "0"))
            .unwrap_or(false)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::Purpose;

    #[test]
    fn runs_script_and_keeps_streams_apart() {
        let script = Script {
            purpose: Purpose::Probe,
            body: "echo out; echo err >&2; exit 3\n".into(),
            become_user: None,
            become_flags: None,
        };
        let out = LocalTransport.run(&script).unwrap();
        assert_eq!(out.status, 3);
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }
}
