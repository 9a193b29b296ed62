//! A job left running (`async` with `poll: 0`) and what `async_status`
//! reads of it: the launch, the record it keeps and the read of that record
//! live together, so both sides agree on one layout.
//!
//! The record sits where Ansible keeps its own, `~/.ansible_async/<jid>`
//! of the task's user: that file holds Ansible's "started" line while the
//! job runs; `<jid>.how` says how its output reads as a result ([`How`]);
//! `<jid>.out` and `<jid>.err` take its output and `<jid>.rc`, renamed
//! into place as the job's last act, says it finished. The folder is the
//! user's own, private and not a link, and every file of the record is
//! created with umask 077 (its first with noclobber).

use crate::base::shell::{here_document, private_folder, quote, USER_HOME};
use crate::remote::probe::{Probe, ProbeResult};

/// A new job id in Ansible's shape (`j<12 digits>.<number>`), drawn from
/// the operating system's random source, so no one can plant its record.
pub fn new_jid() -> String {
    let draw = |text: String| u64::from_str_radix(&text, 16).expect("hex digits");
    let n = draw(crate::base::shell::random_hex()) % 1_000_000_000_000;
    format!(
        "j{n:012}.{}",
        draw(crate::base::shell::random_hex()) % 100_000
    )
}

/// How a finished job's output reads as its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum How {
    /// A command's: its status and output.
    Output,
    /// Ansible's module's: the JSON result it printed.
    Json,
    /// A native module's, decided when it was planned (this JSON), which
    /// holds when its steps succeed.
    Planned(String),
}

impl How {
    fn record(&self) -> String {
        match self {
            How::Output => "output".into(),
            How::Json => "json".into(),
            How::Planned(result) => format!("planned\n{result}"),
        }
    }

    fn read(text: &str) -> Option<How> {
        let (word, rest) = text.split_once('\n').unwrap_or((text, ""));
        match word {
            "output" => Some(How::Output),
            "json" => Some(How::Json),
            "planned" => Some(How::Planned(rest.trim_end().to_string())),
            _ => None,
        }
    }
}

/// The step that starts `body` as job `jid` in a session of its own, out
/// of the script's process group and with no terminal, ended after
/// `seconds`, and prints the record's path. The script the job runs from,
/// which holds the task's `environment:` values, is removed when it ends
/// by a shell outside the `timeout`, so also when `async` kills it.
pub fn launch(jid: &str, seconds: u64, body: &str, how: &How) -> String {
    let started =
        format!("{{\"started\": true, \"finished\": false, \"ansible_job_id\": \"{jid}\"}}");
    let job = format!(
        "umask 077; timeout -k 5 {seconds} /bin/sh \"$1\" >\"$2.out\" 2>\"$2.err\"; \
         echo $? >\"$2.rc.new\" && mv -f \"$2.rc.new\" \"$2.rc\"; rm -f \"$1\""
    );
    format!(
        "{}np_f=\"$np_a\"/{jid}\n\
         (umask 077; set -C; printf '%s\\n' {} >\"$np_f\" && printf '%s\\n' {} >\"$np_f.how\") || exit 1\n\
         np_t=$(mktemp) && {}\
         (setsid /bin/sh -c {} np \"$np_t\" \"$np_f\" </dev/null >/dev/null 2>&1 &)\n\
         printf '%s\\n' \"$np_f\"",
        private_folder("np_a", ".ansible_async"),
        quote(&started),
        quote(&how.record()),
        here_document("cat > \"$np_t\"", body),
        quote(&job),
    )
}

/// What a launch step printed: the record's path, if it started.
pub fn launched(output: &ProbeResult) -> Option<&str> {
    let path = output.stdout.trim_end_matches('\n');
    (output.rc == 0 && path.contains("/.ansible_async/")).then_some(path)
}

/// The read of job `jid`'s record. Its answer changes with time, not
/// with the tasks, so a reader must not keep it.
pub fn probe(jid: &str) -> Probe {
    let jid = quote(jid);
    Probe::new(
        format!("async_job:{jid}"),
        format!(
            "{USER_HOME}np_f=\"$np_h/.ansible_async\"/{jid}\n\
             printf '%s\\n' \"$np_f\"\n\
             if [ ! -f \"$np_f\" ]; then echo missing\n\
             elif [ ! -f \"$np_f.rc\" ]; then echo running\n\
             else printf 'finished %s %s %s\\n' \"$(cat \"$np_f.rc\")\" \"$(wc -c <\"$np_f.out\")\" \"$(wc -c <\"$np_f.how\")\"; \
             cat \"$np_f.out\" \"$np_f.how\" \"$np_f.err\"; fi"
        ),
    )
}

/// A job as its record tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    Missing,
    Running,
    /// Ended with its status and output, read as `how` says.
    Finished {
        output: ProbeResult,
        how: How,
    },
}

/// The record's path and the job's state, from [`probe`]'s answer.
pub fn read(answer: &ProbeResult) -> Option<(String, Job)> {
    let (path, rest) = answer.stdout.split_once('\n')?;
    let (state, rest) = rest.split_once('\n').unwrap_or((rest, ""));
    let job = match state.split(' ').collect::<Vec<_>>()[..] {
        ["missing"] => Job::Missing,
        ["running"] => Job::Running,
        ["finished", rc, out, how] => {
            let (stdout, rest) = split_at(rest, out)?;
            let (how, stderr) = split_at(rest, how)?;
            Job::Finished {
                output: ProbeResult {
                    rc: rc.trim().parse().ok()?,
                    stdout: stdout.to_string(),
                    stderr: stderr.to_string(),
                },
                how: How::read(how)?,
            }
        }
        _ => return None,
    };
    Some((path.to_string(), job))
}

/// `text` split after `len` bytes (fewer where that falls inside a
/// character the output's decoding replaced).
fn split_at<'t>(text: &'t str, len: &str) -> Option<(&'t str, &'t str)> {
    let len: usize = len.trim().parse().ok()?;
    let at = (0..=len.min(text.len()))
        .rev()
        .find(|&n| text.is_char_boundary(n))?;
    Some(text.split_at(at))
}

/// The step that removes job `jid`'s record.
pub fn cleanup(jid: &str) -> String {
    format!(
        "{USER_HOME}np_f=\"$np_h/.ansible_async\"/{}\n\
         rm -f \"$np_f\" \"$np_f.how\" \"$np_f.out\" \"$np_f.err\" \"$np_f.rc\"",
        quote(jid)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_have_ansibles_shape_and_differ() {
        let (a, b) = (new_jid(), new_jid());
        assert_ne!(a, b);
        let (head, tail) = a.split_once('.').unwrap();
        assert!(head.starts_with('j') && head.len() == 13, "{a}");
        assert!(head[1..]
            .chars()
            .chain(tail.chars())
            .all(|c| c.is_ascii_digit()));
    }

    #[test]
    fn a_record_reads_as_its_jobs_state() {
        let at = |s: &str| read(&ProbeResult::ok(s)).unwrap();
        let path = "/root/.ansible_async/j1.2";
        assert_eq!(
            at(&format!("{path}\nmissing\n")),
            (path.into(), Job::Missing)
        );
        assert_eq!(
            at(&format!("{path}\nrunning\n")),
            (path.into(), Job::Running)
        );
        let done = at(&format!("{path}\nfinished 3 6 7\nhello\noutput\noops\n"));
        let output = ProbeResult {
            rc: 3,
            stdout: "hello\n".into(),
            stderr: "oops\n".into(),
        };
        let how = How::Output;
        assert_eq!(done, (path.into(), Job::Finished { output, how }));
        let planned = How::Planned(r#"{"changed": true}"#.into());
        let done = at(&format!("{path}\nfinished 0 0 26\n{}\n", planned.record()));
        let output = ProbeResult::ok("");
        assert_eq!(
            done.1,
            Job::Finished {
                output,
                how: planned
            }
        );
        assert_eq!(read(&ProbeResult::ok("/x\nlost\n")), None);
    }

    #[test]
    fn a_launch_keeps_its_record_private_and_prints_where() {
        let step = launch("j1.2", 9, "sleep 2", &How::Json);
        assert!(step.contains("set -C; printf"), "{step}");
        assert!(step.contains("json >\"$np_f.how\""), "{step}");
        assert!(step.contains("timeout -k 5 9 /bin/sh"), "{step}");
        assert!(step.ends_with("printf '%s\\n' \"$np_f\""), "{step}");
        let out = ProbeResult::ok("/home/u/.ansible_async/j1.2\n");
        assert_eq!(launched(&out), Some("/home/u/.ansible_async/j1.2"));
    }
}
