//! Live progress: on a terminal, one redrawn line per batch on stderr
//! (hosts done, changed, failed); elsewhere, a plain line per batch.

use std::io::Write;
use std::sync::Mutex;

use super::human::host_block;
use crate::exec::Event;

#[derive(Default)]
struct Counts {
    batch: String,
    size: usize,
    done: usize,
    changed: usize,
    drift: usize,
    failed: usize,
}

pub struct Progress {
    tty: bool,
    counts: Mutex<Counts>,
}

impl Progress {
    pub fn new(tty: bool) -> Self {
        Progress {
            tty,
            counts: Mutex::new(Counts::default()),
        }
    }

    /// Handles one run event: host blocks go to `out`, the live line to stderr.
    pub fn event(&self, event: &Event, out: &mut dyn Write) {
        let mut c = self.counts.lock().unwrap();
        match event {
            Event::Batch {
                play,
                number,
                of,
                hosts,
            } => {
                *c = Counts {
                    batch: format!("[{play}] batch {number}/{of}"),
                    size: hosts.len(),
                    ..Counts::default()
                };
                if !self.tty && *of > 1 {
                    let _ = writeln!(out, "BATCH {number}/{of} of '{play}': {}", hosts.join(", "));
                }
            }
            Event::Host(r) => {
                let recap = r.recap();
                c.done += 1;
                c.changed += usize::from(recap.changed > 0);
                c.drift += usize::from(r.drifted());
                c.failed += usize::from(r.failed());
                self.clear_line();
                let _ = write!(out, "{}", host_block(r));
                let _ = out.flush();
            }
        }
        if self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(
                err,
                "\r\x1b[2K{}: {}/{} hosts  changed {}  drift {}  failed {}",
                c.batch, c.done, c.size, c.changed, c.drift, c.failed
            );
            let _ = err.flush();
        }
    }

    /// Removes the live line before regular output.
    pub fn clear_line(&self) {
        if self.tty {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::result::HostReport;

    #[test]
    fn plain_output_names_batches_and_prints_hosts() {
        let p = Progress::new(false);
        let mut out = Vec::new();
        let hosts = vec!["a".to_string(), "b".to_string()];
        p.event(
            &Event::Batch {
                play: "roll",
                number: 1,
                of: 2,
                hosts: &hosts,
            },
            &mut out,
        );
        let r = HostReport {
            host: "a".into(),
            play: "roll".into(),
            unreachable: Some("connection refused".into()),
            tasks: Vec::new(),
            round_trips: 0,
            duration_ms: 0,
            probes: Vec::new(),
        };
        p.event(&Event::Host(&r), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "BATCH 1/2 of 'roll': a, b\nPLAY [roll] a\n  unreachable  connection refused\n"
        );
    }
}
