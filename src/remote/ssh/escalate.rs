//! Privilege escalation with `sudo -S` over a non-interactive channel.
//!
//! The shell under sudo first prints a random success marker on stdout; until
//! it appears we only watch. If sudo prints its (random) prompt on stderr we
//! send the password once; a second prompt means the password was wrong, and
//! we give up instead of feeding it again. Nothing is written before we know
//! sudo wants it, so a NOPASSWD host never sees the password as a command.

use crate::base::escalation::{sudo_options, Prompt};
use crate::base::shell::{quote, random_hex};

pub struct SudoMarkers {
    pub prompt: String,
    pub success: String,
}

impl SudoMarkers {
    pub fn random() -> SudoMarkers {
        let key = random_hex();
        SudoMarkers {
            prompt: format!("[nodeprov sudo {key}] password:"),
            success: format!("NODEPROV-BECOME-SUCCESS-{key}"),
        }
    }
}

/// The remote command: sudo to `user` with `flags` (`become_flags`),
/// announce success, then run the script read from stdin. sudo runs in the
/// C locale so that its messages can be recognised.
pub fn sudo_command(user: &str, flags: Option<&str>, m: &SudoMarkers) -> String {
    let inner = format!("echo {}; LC_ALL=C exec /bin/sh -s", m.success);
    let options: Vec<String> = sudo_options(flags, Prompt::Answered)
        .iter()
        .map(|o| quote(o))
        .collect();
    format!(
        "env LC_ALL=C sudo {} -p {} -u {} -- /bin/sh -c {}",
        options.join(" "),
        quote(&m.prompt),
        quote(user),
        quote(&inner)
    )
}

/// Who is escalating where, for messages.
pub struct BecomeCtx<'a> {
    pub host: &'a str,
    pub login_user: &'a str,
    pub become_user: &'a str,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    Wait,
    SendPassword,
    /// Escalated: drop this many leading bytes of stdout (the marker line).
    Ready(usize),
    Failed(String),
}

/// Decides what to do from what sudo has printed so far.
pub fn classify(
    m: &SudoMarkers,
    ctx: &BecomeCtx,
    stdout: &[u8],
    stderr: &[u8],
    have_password: bool,
    password_sent: bool,
    closed: bool,
) -> Step {
    if let Some(end) = marker_line_end(stdout, m.success.as_bytes()) {
        return Step::Ready(end);
    }
    let prompts = count(stderr, m.prompt.as_bytes());
    if prompts > 1 || (prompts == 1 && closed && password_sent) {
        return Step::Failed(wrong_password(ctx));
    }
    if prompts == 1 && !password_sent {
        return if have_password {
            Step::SendPassword
        } else {
            Step::Failed(format!(
                "sudo on {} asks {} for a password and none was given \
                 (set ansible_become_password, pass --ask-become-pass or NODEPROV_BECOME_PASSWORD)",
                ctx.host, ctx.login_user
            ))
        };
    }
    if closed {
        return Step::Failed(explain_failure(ctx, &strip_prompts(stderr, &m.prompt)));
    }
    Step::Wait
}

fn wrong_password(ctx: &BecomeCtx) -> String {
    format!(
        "sudo: incorrect password for {} on {}",
        ctx.login_user, ctx.host
    )
}

/// Why sudo ended without running the shell, in words a user can act on.
fn explain_failure(ctx: &BecomeCtx, stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let said = text.trim();
    let lower = said.to_ascii_lowercase();
    if lower.contains("must have a tty") {
        format!(
            "sudo on {} requires a tty (Defaults requiretty in sudoers); nodeprov runs without \
             one: add 'Defaults:{} !requiretty' to the sudoers on that host",
            ctx.host, ctx.login_user
        )
    } else if lower.contains("incorrect password") || lower.contains("try again") {
        wrong_password(ctx)
    } else if lower.contains("not in the sudoers") || lower.contains("not allowed to") {
        format!(
            "{} may not run commands as {} with sudo on {}: {said}",
            ctx.login_user, ctx.become_user, ctx.host
        )
    } else if lower.contains("sudo: not found") || lower.contains("sudo: command not found") {
        format!("sudo is not installed on {}", ctx.host)
    } else if said.is_empty() {
        format!(
            "sudo to {} on {} ended without running the script",
            ctx.become_user, ctx.host
        )
    } else {
        format!("sudo to {} on {} failed: {said}", ctx.become_user, ctx.host)
    }
}

/// Removes sudo's prompts (and the newline sudo may print after one).
pub fn strip_prompts(stderr: &[u8], prompt: &str) -> Vec<u8> {
    let p = prompt.as_bytes();
    let mut out = Vec::with_capacity(stderr.len());
    let mut i = 0;
    while i < stderr.len() {
        if stderr[i..].starts_with(p) {
            i += p.len();
            if stderr.get(i) == Some(&b'\n') {
                i += 1;
            }
        } else {
            out.push(stderr[i]);
            i += 1;
        }
    }
    out
}

fn marker_line_end(stdout: &[u8], marker: &[u8]) -> Option<usize> {
    let at = find(stdout, marker)?;
    let nl = stdout[at..].iter().position(|&b| b == b'\n')?;
    Some(at + nl + 1)
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: BecomeCtx = BecomeCtx {
        host: "gpu-03",
        login_user: "deploy",
        become_user: "root",
    };

    fn step(m: &SudoMarkers, out: &str, err: &str, have: bool, sent: bool, closed: bool) -> Step {
        classify(m, &CTX, out.as_bytes(), err.as_bytes(), have, sent, closed)
    }

    #[test]
    fn markers_are_random_and_quoted_into_the_command() {
        let (a, b) = (SudoMarkers::random(), SudoMarkers::random());
        assert_ne!(a.success, b.success);
        let flagged = sudo_command("postgres", Some("-i -n"), &a);
        assert!(
            flagged.starts_with("env LC_ALL=C sudo -i -S -p '"),
            "{flagged}"
        );
        let cmd = sudo_command("postgres", None, &a);
        assert!(
            cmd.starts_with("env LC_ALL=C sudo -H -S -p '[nodeprov sudo "),
            "{cmd}"
        );
        assert!(cmd.contains(" -u postgres -- /bin/sh -c 'echo NODEPROV-BECOME-SUCCESS-"));
    }

    #[test]
    fn nopasswd_succeeds_without_sending_anything() {
        let m = SudoMarkers::random();
        assert_eq!(step(&m, "", "", true, false, false), Step::Wait);
        let out = format!("{}\nscript output", m.success);
        assert_eq!(
            step(&m, &out, "", true, false, false),
            Step::Ready(m.success.len() + 1)
        );
    }

    #[test]
    fn prompt_gets_the_password_once_and_a_second_prompt_is_wrong_password() {
        let m = SudoMarkers::random();
        let once = m.prompt.clone();
        assert_eq!(step(&m, "", &once, true, false, false), Step::SendPassword);
        assert_eq!(step(&m, "", &once, true, true, false), Step::Wait);
        let twice = format!("{0}\nSorry, try again.\n{0}", m.prompt);
        assert_eq!(
            step(&m, "", &twice, true, true, false),
            Step::Failed("sudo: incorrect password for deploy on gpu-03".into())
        );
        let out = format!("{}\n", m.success);
        assert!(matches!(
            step(&m, &out, &once, true, true, false),
            Step::Ready(_)
        ));
    }

    #[test]
    fn prompt_without_a_password_is_explained() {
        let m = SudoMarkers::random();
        let Step::Failed(msg) = step(&m, "", &m.prompt, false, false, false) else {
            panic!("must fail");
        };
        assert!(msg.contains("--ask-become-pass"), "{msg}");
    }

    #[test]
    fn requiretty_and_sudoers_refusals_are_explained() {
        let m = SudoMarkers::random();
        let tty = "sudo: sorry, you must have a tty to run sudo\n";
        let Step::Failed(msg) = step(&m, "", tty, true, false, true) else {
            panic!("must fail");
        };
        assert!(
            msg.contains("requiretty") && msg.contains("!requiretty"),
            "{msg}"
        );
        let denied = "deploy is not in the sudoers file.  This incident will be reported.\n";
        let Step::Failed(msg) = step(&m, "", denied, true, false, true) else {
            panic!("must fail");
        };
        assert!(
            msg.starts_with("deploy may not run commands as root"),
            "{msg}"
        );
    }

    #[test]
    fn prompts_are_stripped_from_stderr() {
        let m = SudoMarkers::random();
        let err = format!("{}\nwarning: x\n", m.prompt);
        assert_eq!(strip_prompts(err.as_bytes(), &m.prompt), b"warning: x\n");
    }
}
