//! The batched remote script: many read-only probes (or guarded steps) in
//! one execution, their outputs framed so they can be split apart again.
//!
//! Each unit's output is framed as `@@NP <token> <index> <rc> <outlen> <errlen>`
//! followed by exactly `outlen` bytes of stdout and `errlen` bytes of stderr,
//! so no output can be mistaken for a frame boundary.
//!
//! Steps (scripts that stop at the first failure) send each frame as the unit
//! ends, so a host lost mid-script still tells which steps finished. Probes
//! are read-only and all run, so their frames are sent together at the end as
//! a table (`@@NP <token> table <n>`, then the n headers, then the outputs
//! in header order): one `wc` and one `cat` for the whole script instead of
//! two `wc` and a `cat` per unit, since a probe runs on busy production nodes.
//! A probe unit may also attach host files (`np_cat FILE...`): the same `wc`
//! and `cat` read them after every output, and their sizes end the unit's
//! header, so a probe that reads files starts no process for them.
//!
//! A unit runs as `command eval "( BODY )"`: a subshell, so its `exit`, `cd`
//! or variables stay its own, that is the unit's only extra process, since
//! the shell runs the subshell's last command in place (`( eval BODY )`
//! would start it as one more process: eval runs every command of its text
//! as a child). `command` keeps a syntax error in a body to its own unit
//! (rc 2, the shell's message as its stderr) instead of ending the script.
//! Only a body built to close the subshell's parenthesis and reopen one
//! could run code in the script's own shell; bodies come from the playbook's
//! author, who runs commands on the host anyway.

use std::collections::BTreeMap;

use crate::base::shell::{quote, quote_into};
pub use crate::remote::joint::Joint;

/// Keys that start with this name an answer that stays true for the rest
/// of the run whatever the tasks do (a payload put in place under its
/// digest), so it is kept when a command makes every other answer stale.
pub const DURABLE: &str = "durable:";

/// Whether a probe's answer outlives the commands that run after it.
pub fn is_durable(key: &str) -> bool {
    key.starts_with(DURABLE)
}

/// One read-only question for the host, identified by a canonical key so
/// that tasks asking the same question share one answer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Probe {
    pub key: String,
    pub script: String,
    /// How it shares one unit with probes of its group, if it can.
    pub joint: Option<Joint>,
}

impl Probe {
    pub fn new(key: impl Into<String>, script: impl Into<String>) -> Self {
        Probe {
            key: key.into(),
            script: script.into(),
            joint: None,
        }
    }

    pub fn with_joint(self, joint: Joint) -> Self {
        Probe {
            joint: Some(joint),
            ..self
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeResult {
    pub rc: i32,
    pub stdout: String,
    pub stderr: String,
}

impl ProbeResult {
    pub fn ok(stdout: impl Into<String>) -> Self {
        ProbeResult {
            rc: 0,
            stdout: stdout.into(),
            stderr: String::new(),
        }
    }
}

/// Unit output is staged in `$TMPDIR/nodeprov.<pid>.XXXXXX`, removed when the
/// script ends, also by a signal (a lost controller shows as SIGPIPE or
/// SIGHUP). A script killed outright cannot clean up: each script first
/// removes the directories of scripts whose shell is gone.
const PRELUDE: &str = r#"np_d=${TMPDIR:-/tmp}
for np_o in "$np_d"/nodeprov.*.*; do
  np_p=${np_o#"$np_d"/nodeprov.}; np_p=${np_p%%.*}
  case $np_p in ''|*[!0-9]*) continue ;; esac
  [ -d "$np_o" ] && ! kill -0 "$np_p" 2>/dev/null && rm -rf "$np_o"
done
np_t=$(mktemp -d "$np_d/nodeprov.$$.XXXXXX") || exit 90
trap 'rm -rf "$np_t"' EXIT
umask >"$np_t/um" && read -r np_um <"$np_t/um" || exit 90
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
np_nl='
'
"#;

/// Frames each unit as it ends: one `wc` for both outputs (named inside
/// the staging folder, so a space in `$TMPDIR` does not split its answer)
/// and one `cat`, or neither for a unit that printed nothing.
///
/// A timed unit (`t` after its body) adds when it ran to its frame
/// (`T<clock>/<before>/<after>`, see [`RunTimes`]): the host's clock and time
/// zone are read once per script (one `date`), each unit's start and end
/// from a clock read without a process: bash's `EPOCHREALTIME`, else the
/// kernel's uptime.
const STREAM: &str = r#"np_mono() {
  if [ -n "${EPOCHREALTIME:-}" ]; then np_v=$EPOCHREALTIME
  else read -r np_v _ </proc/uptime 2>/dev/null || np_v=-; fi
}
np_now() {
  if [ -z "${np_clock:-}" ]; then
    np_clock=$(date '+%s.%N/%z' 2>/dev/null) || np_clock=-/-
    np_mono; np_clock="$np_clock/$np_v"
  fi
  np_mono; eval "$1=\$np_v"
}
np_unit() {
  [ "$4" != t ] || np_now np_m0
  command eval "( $3
)" </dev/null >"$np_t/o" 2>"$np_t/e"
  np_rc=$? np_i=$1 np_tm=
  [ "$4" != t ] || { np_now np_m1; np_tm=" T$np_clock/$np_m0/$np_m1"; }
  if [ -s "$np_t/o" ] || [ -s "$np_t/e" ]; then
    set -- $(cd "$np_t" && exec wc -c o e)
    printf '@@NP %s %s %s %s %s%s\n' "$np_tok" "$np_i" "$np_rc" "$1" "$3" "$np_tm"
    cat "$np_t/o" "$np_t/e"
  else
    printf '@@NP %s %s %s 0 0%s\n' "$np_tok" "$np_i" "$np_rc" "$np_tm"
  fi
  return $np_rc
}
"#;

/// Keeps every unit's output in its own files and sends the table at the
/// end; only shell builtins besides the one `wc` and the one `cat`.
/// Names are relative to the staging folder, so a space in `$TMPDIR` does
/// not split them.
///
/// `np_cat FILE...` in a unit attaches host files to its answer: the one
/// `wc` and the one `cat` read them after every staged output, so a probe
/// that reads files costs no process of its own for them. The unit's
/// answer is its output, then a line of the files' sizes, then the files
/// (see [`parse_frames`] and [`carry`]: a file that is not UTF-8 text is
/// base64-encoded). A path with a newline (it would break the list) is
/// copied into the staging folder first.
const TABLE: &str = r#"np_n=0 np_rcs= np_fs=
np_unit() {
  np_i=$1
  command eval "( $3
)" </dev/null >"$np_t/o$1" 2>"$np_t/e$1"
  np_rcs="$np_rcs $?" np_fs="$np_fs o$1 e$1" np_n=$((np_n + 1))
}
np_cat() {
  np_r=0
  for np_f do
    case $np_f in /*) ;; *) np_f=$PWD/$np_f ;; esac
    if ! true <"$np_f"; then np_r=1; continue; fi
    case $np_f in *"$np_nl"*)
      np_c=$((np_c + 1)); np_k=n$np_i.$np_c
      cat -- "$np_f" >"$np_t/$np_k" || { np_r=1; continue; }
      np_f=$np_k ;;
    esac
    printf '%s\n' "$np_f" >>"$np_t/a$np_i"
  done
  return $np_r
}
np_pop() {
  eval "np_l=\${$1%%\"\$np_nl\"*} $1=\${$1#*\"\$np_nl\"}"
  np_l=${np_l#"${np_l%%[! ]*}"}; np_s=${np_l%% *}
}
np_end() {
  cd "$np_t" || exit 90
  printf '@@NP %s table %s\n' "$np_tok" "$np_n"
  [ "$np_n" -gt 0 ] || exit 0
  set -f
  set -- $np_fs
  np_i=0 np_as=
  while [ "$np_i" -lt "$np_n" ]; do
    np_a=0
    if [ -f "a$np_i" ]; then
      while IFS= read -r np_f; do set -- "$@" "$np_f"; np_a=$((np_a + 1)); done <"a$np_i"
    fi
    np_as="$np_as$np_a " np_i=$((np_i + 1))
  done
  np_w=$(wc -c -- "$@") || exit 92
  np_w=$np_w$np_nl np_v=$np_w np_i=0
  while [ "$np_i" -lt $((2 * np_n)) ]; do np_pop np_v; np_i=$((np_i + 1)); done
  np_i=0
  for np_rc in $np_rcs; do
    np_pop np_w; np_h="@@NP $np_tok $np_i $np_rc $np_s"; np_pop np_w
    np_h="$np_h $np_s" np_a=${np_as%% *} np_as=${np_as#* }
    while [ "$np_a" -gt 0 ]; do np_pop np_v; np_h="$np_h $np_s" np_a=$((np_a - 1)); done
    printf '%s\n' "$np_h"
    np_i=$((np_i + 1))
  done
  cat -- "$@"
}
"#;

/// Builds a script that runs each `(id, body)` unit and frames its output.
/// With `stop_on_failure`, the first failing unit ends the script (the rest
/// never run), except units whose id is listed in `may_fail`.
pub fn build_script(
    token: &str,
    units: &[(String, String)],
    stop_on_failure: bool,
    may_fail: &[String],
) -> String {
    let size = units.iter().map(|(id, body)| id.len() + body.len()).sum();
    let mut script = ScriptBuilder::new(token, stop_on_failure, size);
    for (id, body) in units {
        script.unit(id, body, may_fail.contains(id));
    }
    script.finish()
}

/// A script built unit by unit into one buffer, so that a caller holding
/// large bodies (whole files) can drop each one as soon as it is in.
pub struct ScriptBuilder {
    out: String,
    stop_on_failure: bool,
    next: usize,
}

impl ScriptBuilder {
    /// `size` is what the units will roughly add, to allocate once.
    pub fn new(token: &str, stop_on_failure: bool, size: usize) -> ScriptBuilder {
        let framing = if stop_on_failure { STREAM } else { TABLE };
        let mut out = String::with_capacity(PRELUDE.len() + framing.len() + size + 256);
        out.push_str(&format!("np_tok={}\n{PRELUDE}{framing}", quote(token)));
        ScriptBuilder {
            out,
            stop_on_failure,
            next: 0,
        }
    }

    pub fn unit(&mut self, id: &str, body: &str, may_fail: bool) {
        self.push(id, body, may_fail, false);
    }

    /// A unit whose frame says when it ran (see [`STREAM`]); only a script
    /// that stops on failure times its units.
    pub fn timed_unit(&mut self, id: &str, body: &str, may_fail: bool) {
        self.push(id, body, may_fail, self.stop_on_failure);
    }

    fn push(&mut self, id: &str, body: &str, may_fail: bool, timed: bool) {
        // A secret of the unit's own, for the names of the temp files it
        // writes (`files::temp_beside`): no one can plant a link there in
        // advance, nor learn the next unit's names from this one's.
        if self.stop_on_failure {
            self.out.push_str("np_r=");
            self.out.push_str(&crate::base::shell::random_hex());
            self.out.push_str(&crate::base::shell::random_hex());
            self.out.push('\n');
        }
        // The id rides along unused by the shell, for readers and fakes.
        self.out
            .push_str(&format!("np_unit {} {} ", self.next, quote(id)));
        quote_into(&mut self.out, body);
        if timed {
            self.out.push_str(" t");
        }
        if self.stop_on_failure && !may_fail {
            self.out.push_str(" || exit 91");
        }
        self.out.push('\n');
        self.next += 1;
    }

    pub fn finish(mut self) -> String {
        if !self.stop_on_failure {
            self.out.push_str("np_end\n");
        }
        self.out
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct FrameError(pub String);

/// Splits framed output back into results by unit id (`ids` in the order
/// the units were given to [`build_script`]).
pub fn parse_frames(
    token: &str,
    stdout: &[u8],
    ids: &[String],
) -> Result<BTreeMap<String, ProbeResult>, FrameError> {
    let mut results = BTreeMap::new();
    read_frames(token, stdout, ids, &mut results, &mut BTreeMap::new()).map(|()| results)
}

/// The units whose frames arrived whole, for output that may have been cut
/// off (a host lost mid-script): a unit without a frame did not finish.
/// With when each timed unit ran.
pub fn complete_frames(
    token: &str,
    stdout: &[u8],
    ids: &[String],
) -> (BTreeMap<String, ProbeResult>, BTreeMap<String, RunTimes>) {
    let mut results = BTreeMap::new();
    let mut ran = BTreeMap::new();
    let _ = read_frames(token, stdout, ids, &mut results, &mut ran);
    (results, ran)
}

fn read_frames(
    token: &str,
    stdout: &[u8],
    ids: &[String],
    results: &mut BTreeMap<String, ProbeResult>,
    ran: &mut BTreeMap<String, RunTimes>,
) -> Result<(), FrameError> {
    let marker = format!("@@NP {token} ");
    let (first, after) = header_line(stdout)?;
    if let Some(n) = first
        .strip_prefix(&marker)
        .and_then(|f| f.strip_prefix("table "))
    {
        let n: usize = n
            .parse()
            .map_err(|_| FrameError(format!("bad frame table: {first}")))?;
        let mut rest = after;
        let mut headers = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            let (header, next) = header_line(rest)?;
            headers.push(header);
            rest = next;
        }
        let mut frames = Vec::with_capacity(headers.len());
        for header in &headers {
            match read_frame(&marker, header, rest, ids) {
                Ok(frame) => {
                    rest = &rest[frame.out.len() + frame.err.len()..];
                    frames.push(frame);
                }
                Err(e) => {
                    // Attached files come last: only the others arrived whole.
                    for frame in frames.into_iter().filter(|f| f.attached.is_empty()) {
                        frame.insert_into(results, Some(Vec::new()));
                    }
                    return Err(e);
                }
            }
        }
        return attach_files(frames, rest, results);
    }
    let mut rest = stdout;
    while !rest.is_empty() {
        let (header, body) = header_line(rest)?;
        let frame = read_frame(&marker, &header, body, ids)?;
        if !frame.attached.is_empty() {
            return Err(FrameError(format!("bad frame header: {header}")));
        }
        rest = &body[frame.out.len() + frame.err.len()..];
        if let Some(times) = frame.ran.as_deref().and_then(RunTimes::read) {
            ran.insert(frame.id.to_string(), times);
        }
        frame.insert_into(results, Some(Vec::new()));
    }
    Ok(())
}

/// The first line of `out` (without its newline) and what follows it.
fn header_line(out: &[u8]) -> Result<(String, &[u8]), FrameError> {
    let nl = out
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| FrameError("truncated frame header".into()))?;
    Ok((
        String::from_utf8_lossy(&out[..nl]).into_owned(),
        &out[nl + 1..],
    ))
}

/// One unit's answer as framed: its own output, and the sizes of the host
/// files it attached (`np_cat`), whose bytes come after every unit's output.
struct Frame<'a> {
    id: &'a str,
    rc: i32,
    out: &'a [u8],
    err: &'a [u8],
    attached: Vec<usize>,
    /// A timed unit's `T…` field, without the `T`.
    ran: Option<String>,
}

/// The exit status of a unit whose attached files changed between the
/// `wc` that measured them and the `cat` that sent them.
const CHANGED_WHILE_READ: i32 = 94;

impl Frame<'_> {
    /// Records the answer. `files` are the attached files' bytes, in
    /// order, which go after the output behind a line of their sizes;
    /// `None` when they were lost.
    fn insert_into(self, results: &mut BTreeMap<String, ProbeResult>, files: Option<Vec<&[u8]>>) {
        let mut r = ProbeResult {
            rc: self.rc,
            stdout: String::from_utf8_lossy(self.out).into_owned(),
            stderr: String::from_utf8_lossy(self.err).into_owned(),
        };
        match files.filter(|_| !self.attached.is_empty()) {
            Some(files) => {
                let carried: Vec<(String, std::borrow::Cow<str>)> =
                    files.iter().map(|f| carry(f)).collect();
                let sizes: Vec<&str> = carried.iter().map(|(size, _)| size.as_str()).collect();
                r.stdout.push_str(&format!("{}\n", sizes.join(" ")));
                carried.iter().for_each(|(_, t)| r.stdout.push_str(t));
            }
            None if !self.attached.is_empty() => {
                r.rc = CHANGED_WHILE_READ;
                r.stderr
                    .push_str("the files it read changed while they were read\n");
            }
            None => {}
        }
        results.insert(self.id.to_string(), r);
    }
}

/// An attached file as an answer's text carries it, with its size there:
/// UTF-8 text as it is, sized by its length; any other bytes base64-encoded,
/// sized `b<length>`, so that `slurp` or a checksum gets the file's bytes,
/// not U+FFFD in their place.
pub(crate) fn carry(file: &[u8]) -> (String, std::borrow::Cow<'_, str>) {
    use base64::Engine;
    match std::str::from_utf8(file) {
        Ok(text) => (text.len().to_string(), text.into()),
        Err(_) => {
            let text = base64::engine::general_purpose::STANDARD.encode(file);
            (format!("b{}", text.len()), text.into())
        }
    }
}

/// An attached file read back from an answer: what [`carry`] made of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Carried<'a> {
    Text(&'a str),
    Bytes(Vec<u8>),
}

/// The length in the answer's text of an attached file of this size.
pub(crate) fn carried_len(size: &str) -> Option<usize> {
    size.strip_prefix('b').unwrap_or(size).parse().ok()
}

/// The file an attached file's size and text in the answer stand for.
pub(crate) fn uncarry<'a>(size: &str, text: &'a str) -> Option<Carried<'a>> {
    use base64::Engine;
    match size.strip_prefix('b') {
        None => Some(Carried::Text(text)),
        Some(_) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()
            .map(Carried::Bytes),
    }
}

/// Gives each frame its attached files from `rest`, the bytes after every
/// unit's output. When they do not add up (a file grew or shrank between
/// `wc` and `cat`) no file can be told from the next, so every unit that
/// attached one fails, and the others keep their answers.
fn attach_files(
    frames: Vec<Frame>,
    mut rest: &[u8],
    results: &mut BTreeMap<String, ProbeResult>,
) -> Result<(), FrameError> {
    let total: usize = frames.iter().flat_map(|f| &f.attached).sum();
    if total == 0 && !rest.is_empty() {
        return Err(FrameError("output after the last frame".into()));
    }
    let whole = rest.len() == total;
    for frame in frames {
        let files = whole.then(|| {
            let sizes = frame.attached.iter();
            sizes
                .map(|&n| {
                    let (file, next) = rest.split_at(n);
                    rest = next;
                    file
                })
                .collect()
        });
        frame.insert_into(results, files);
    }
    Ok(())
}

/// Reads the frame `header` announces from the front of `body`.
fn read_frame<'a>(
    marker: &str,
    header: &str,
    body: &'a [u8],
    ids: &'a [String],
) -> Result<Frame<'a>, FrameError> {
    let bad = || FrameError(format!("bad frame header: {header}"));
    let fields = header
        .strip_prefix(marker)
        .ok_or_else(|| FrameError(format!("unexpected output: {header}")))?;
    let mut parts: Vec<&str> = fields.split(' ').collect();
    let ran = match parts.last().and_then(|p| p.strip_prefix('T')) {
        Some(times) => {
            let times = times.to_string();
            parts.pop();
            Some(times)
        }
        None => None,
    };
    let [index, rc, outlen, errlen, attached @ ..] = &parts[..] else {
        return Err(bad());
    };
    let id = index
        .parse::<usize>()
        .ok()
        .and_then(|i| ids.get(i))
        .ok_or_else(bad)?;
    let num = |s: &&str| s.trim().parse::<usize>().map_err(|_| bad());
    let (outlen, errlen) = (num(outlen)?, num(errlen)?);
    if body.len() < outlen + errlen {
        return Err(FrameError(format!("truncated output of {id}")));
    }
    Ok(Frame {
        id,
        rc: rc.parse().unwrap_or(-1),
        out: &body[..outlen],
        err: &body[outlen..outlen + errlen],
        attached: attached.iter().map(num).collect::<Result<_, _>>()?,
        ran,
    })
}

/// When a timed unit ran, by the host's clock and in its time zone, as
/// Ansible's command module returns it (Python's `str` of a `datetime`
/// and of the `timedelta` between them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunTimes {
    pub start: String,
    pub end: String,
    pub delta: String,
}

impl RunTimes {
    /// `<epoch>/<zone>/<clock>/<before>/<after>`: the host's time and zone
    /// (`date +%s.%N/%z`) when its other clock read `<clock>`, then that
    /// clock before and after the unit. None when the host could not say.
    fn read(field: &str) -> Option<RunTimes> {
        let [epoch, zone, clock, before, after] = field.split('/').collect::<Vec<_>>()[..] else {
            return None;
        };
        let (epoch, clock) = (micros(epoch)?, micros(clock)?);
        let (before, after) = (micros(before)?, micros(after)?);
        let offset = zone_seconds(zone)? * 1_000_000;
        // Python leaves the fraction out only at zero microseconds, which
        // its clock all but never reads; a host's clock in hundredths often
        // does, and the time is no whole second for that.
        let fraction = |text: String| match text.contains('.') {
            true => text,
            false => text + ".000000",
        };
        let local = |at: i64| {
            let t = epoch + (at - clock) + offset;
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_micros(t.max(0) as u64);
            fraction(crate::base::time::python_datetime(t))
        };
        Some(RunTimes {
            start: local(before),
            end: local(after),
            delta: fraction(crate::base::time::python_timedelta(
                (after - before).max(0) as u64
            )),
        })
    }
}

/// `1733561234.123456789` (or with a decimal comma) in microseconds.
fn micros(decimal: &str) -> Option<i64> {
    let (whole, fraction) = decimal.split_once(['.', ',']).unwrap_or((decimal, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(fraction.is_empty() || digits(fraction)) {
        return None;
    }
    let fraction: String = fraction
        .chars()
        .chain(std::iter::repeat('0'))
        .take(6)
        .collect();
    Some(whole.parse::<i64>().ok()? * 1_000_000 + fraction.parse::<i64>().ok()?)
}

/// `+0100` / `-0530` in seconds east of UTC.
fn zone_seconds(zone: &str) -> Option<i64> {
    let (sign, hhmm) = match zone.split_at_checked(1)? {
        ("+", rest) => (1, rest),
        ("-", rest) => (-1, rest),
        _ => return None,
    };
    if hhmm.len() != 4 || !hhmm.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m) = (
        hhmm[..2].parse::<i64>().ok()?,
        hhmm[2..].parse::<i64>().ok()?,
    );
    Some(sign * (h * 3600 + m * 60))
}

/// Answers a script built by [`build_script`] the way a host would, from a
/// function of each unit's id. For fake transports in tests.
#[cfg(test)]
pub(crate) fn fake_answer(script: &str, mut answer: impl FnMut(&str) -> ProbeResult) -> Vec<u8> {
    let token = script
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("np_tok="))
        .map(|t| t.trim_matches('\''))
        .unwrap_or_default()
        .to_string();
    let mut out = Vec::new();
    for line in script.lines().filter_map(|l| l.strip_prefix("np_unit ")) {
        let words = crate::base::shell::split(line);
        let r = answer(&words[1]);
        let index = &words[0];
        out.extend(
            format!(
                "@@NP {token} {index} {} {} {}\n",
                r.rc,
                r.stdout.len(),
                r.stderr.len()
            )
            .as_bytes(),
        );
        out.extend(r.stdout.as_bytes());
        out.extend(r.stderr.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::local::LocalTransport;
    use crate::remote::{Purpose, Script, Transport};

    fn ids(units: &[(String, String)]) -> Vec<String> {
        units.iter().map(|u| u.0.clone()).collect()
    }

    fn run(body: String) -> Vec<u8> {
        let script = Script {
            purpose: Purpose::Probe,
            body,
            become_user: None,
            become_flags: None,
        };
        LocalTransport.run(&script).unwrap().stdout
    }

    #[test]
    fn frames_survive_hostile_output() {
        let units = vec![
            (
                "a".to_string(),
                "printf '@@NP fake 1 2 3\\nx'; echo e >&2; exit 4".to_string(),
            ),
            (
                "b".to_string(),
                "echo \"$(printf '%s' \"it's\")\"".to_string(),
            ),
        ];
        let out = run(build_script("tok1", &units, false, &[]));
        let res = parse_frames("tok1", &out, &ids(&units)).unwrap();
        assert_eq!(res["a"].rc, 4);
        assert_eq!(res["a"].stdout, "@@NP fake 1 2 3\nx");
        assert_eq!(res["a"].stderr, "e\n");
        assert_eq!(res["b"].stdout, "it's\n");
    }

    #[test]
    fn a_unit_keeps_its_exit_variables_and_syntax_errors_to_itself() {
        let units = vec![
            ("set".to_string(), "np_x=1; cd /; exit 4".to_string()),
            ("broken".to_string(), "if then".to_string()),
            ("after".to_string(), "echo \"[$np_x]\"".to_string()),
        ];
        for stop_on_failure in [false, true] {
            let may_fail: Vec<String> = ids(&units);
            let out = run(build_script("t", &units, stop_on_failure, &may_fail));
            let res = parse_frames("t", &out, &ids(&units)).unwrap();
            assert_eq!(res["set"].rc, 4);
            assert_eq!(res["broken"].rc, 2);
            assert!(
                res["broken"].stderr.contains("yntax"),
                "{:?}",
                res["broken"]
            );
            assert_eq!(res["after"].stdout, "[]\n");
        }
    }

    /// The unit's subshell runs its last command in place: that command's
    /// parent is the script's shell, not a shell in between.
    #[test]
    fn a_unit_running_one_command_is_one_process() {
        let units = vec![
            ("shell".to_string(), "echo $$".to_string()),
            ("parent".to_string(), "sh -c 'echo $PPID'".to_string()),
        ];
        let out = run(build_script("t", &units, false, &[]));
        let res = parse_frames("t", &out, &ids(&units)).unwrap();
        assert_eq!(res["parent"].stdout, res["shell"].stdout);
    }

    #[test]
    fn a_timed_unit_says_when_it_ran_by_the_hosts_clock() {
        let mut script = ScriptBuilder::new("t", true, 64);
        script.unit("plain", "true", false);
        script.timed_unit("slow", "sleep 0.3; echo done", false);
        let ids = ["plain".to_string(), "slow".to_string()];
        let before = std::time::SystemTime::now();
        let (results, ran) = complete_frames("t", &run(script.finish()), &ids);
        assert_eq!(results["slow"].stdout, "done\n");
        assert_eq!(ran.keys().collect::<Vec<_>>(), ["slow"]);
        let slow = &ran["slow"];
        // Centiseconds at worst (the kernel's uptime, where the shell has
        // no EPOCHREALTIME).
        let (secs, fraction) = slow.delta.split_once('.').unwrap_or((&slow.delta, "0"));
        let took: f64 = format!("{}.{fraction}", &secs[secs.len() - 2..])
            .parse()
            .unwrap();
        assert!((0.29..5.0).contains(&took), "{slow:?}");
        let start_secs = slow.start.get(..19).unwrap();
        let utc = crate::base::time::python_datetime(before);
        // The host here is this machine, whose zone may be anything:
        // its date is today's, at least.
        assert_eq!(start_secs.len(), 19, "{slow:?}");
        assert!(slow.end > slow.start, "{slow:?}");
        assert_eq!(&start_secs[..4], &utc[..4]);
    }

    #[test]
    fn under_bash_a_timed_unit_is_timed_to_the_microsecond() {
        let mut script = ScriptBuilder::new("t", true, 64);
        script.timed_unit("slow", "sleep 0.2", false);
        let out = std::process::Command::new("bash")
            .args(["-c", &script.finish()])
            .output()
            .unwrap();
        let (_, ran) = complete_frames("t", &out.stdout, &["slow".to_string()]);
        let slow = &ran["slow"];
        let micros = |s: &str| s.rsplit_once('.').map(|(_, f)| f.to_string());
        // EPOCHREALTIME's microseconds, not the uptime's hundredths.
        let (start, delta) = (micros(&slow.start).unwrap(), micros(&slow.delta).unwrap());
        assert!(
            !(start.ends_with("0000") && delta.ends_with("0000")),
            "{slow:?}"
        );
        assert!(slow.delta.starts_with("0:00:00."), "{slow:?}");
    }

    #[test]
    fn run_times_read_the_hosts_clock_zone_and_either_decimal_mark() {
        // 2026-12-07 08:00:00 UTC, read when uptime said 100.00; the unit
        // ran from uptime 130.25 to 133.50, on a host at +0530.
        let read = RunTimes::read("1796630400.000000000/+0530/100.00/130.25/133,5").unwrap();
        assert_eq!(read.start, "2026-12-07 13:30:30.250000");
        assert_eq!(read.end, "2026-12-07 13:30:33.500000");
        assert_eq!(read.delta, "0:00:03.250000");
        // A whole second by a clock in hundredths keeps its fraction.
        let whole = RunTimes::read("1796630400/+0000/100.00/101.00/104.00").unwrap();
        assert_eq!(whole.delta, "0:00:03.000000");
        assert_eq!(whole.start, "2026-12-07 08:00:01.000000");
        for unreadable in [
            "%s.%N/%z/1/2/3",
            "-/-/1.0/2.0/3.0",
            "1/+0000/-/1/2",
            "1/2/3",
        ] {
            assert_eq!(RunTimes::read(unreadable), None, "{unreadable}");
        }
    }

    #[test]
    fn stop_on_failure_skips_later_units() {
        let units = vec![
            ("1".to_string(), "false".to_string()),
            ("2".to_string(), "echo never".to_string()),
        ];
        let out = run(build_script("t", &units, true, &[]));
        let res = parse_frames("t", &out, &ids(&units)).unwrap();
        assert_eq!(res["1"].rc, 1);
        assert!(!res.contains_key("2"));
    }

    #[test]
    fn output_cut_off_mid_frame_keeps_the_frames_that_arrived_whole() {
        let units = vec![
            ("1".to_string(), "echo one".to_string()),
            ("2".to_string(), "echo two".to_string()),
        ];
        let out = run(build_script("t", &units, true, &[]));
        let cut = &out[..out.len() - 2];
        assert!(parse_frames("t", cut, &ids(&units)).is_err());
        let (whole, _) = complete_frames("t", cut, &ids(&units));
        assert_eq!(whole.keys().collect::<Vec<_>>(), ["1"]);
        assert_eq!(whole["1"].stdout, "one\n");
    }

    #[test]
    fn staging_dirs_of_dead_scripts_are_swept_and_the_own_one_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        gone.wait().unwrap();
        let dir = |name: String| {
            let path = tmp.path().join(name);
            std::fs::create_dir(&path).unwrap();
            path
        };
        let stale = dir(format!("nodeprov.{}.aaaaaa", gone.id()));
        let in_use = dir(format!("nodeprov.{}.bbbbbb", std::process::id()));
        let not_ours = dir("nodeprov.notes.txt".into());
        std::fs::write(stale.join("o"), "left by a killed script").unwrap();
        let units = vec![("u".to_string(), "echo \"$np_t\"".to_string())];
        let body = build_script("t", &units, false, &[]);
        let out = run(format!("TMPDIR={}\n{body}", tmp.path().display()));
        let res = parse_frames("t", &out, &ids(&units)).unwrap();
        let own = std::path::PathBuf::from(res["u"].stdout.trim_end());
        assert!(own.starts_with(tmp.path()), "{own:?}");
        assert!(own.to_str().unwrap().contains("/nodeprov."), "{own:?}");
        assert!(!own.exists(), "removed when the script ended");
        assert!(!stale.exists(), "swept: its shell is gone");
        assert!(in_use.exists() && not_ours.exists());
    }

    /// `dir` with `wc`, `cat`, `mktemp` and `rm` that log their name to
    /// `dir/log` before running the real one.
    fn logging_tools(dir: &std::path::Path) -> String {
        use std::os::unix::fs::PermissionsExt;
        for tool in ["wc", "cat", "mktemp", "rm"] {
            let path = dir.join(tool);
            let real = format!("/usr/bin/{tool}");
            let real = if std::path::Path::new(&real).exists() {
                real
            } else {
                format!("/bin/{tool}")
            };
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\necho {tool} >> '{}/log'\nexec {real} \"$@\"\n",
                    dir.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        format!("PATH={}:/usr/bin:/bin\n", dir.display())
    }

    /// The tools [`logging_tools`] saw run, sorted.
    fn logged(dir: &std::path::Path) -> Vec<String> {
        let text = std::fs::read_to_string(dir.join("log")).unwrap();
        let mut log: Vec<String> = text.lines().map(String::from).collect();
        log.sort();
        log
    }

    #[test]
    fn a_probe_script_frames_all_units_with_one_wc_and_one_cat() {
        let tools = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir_in(tools.path()).unwrap();
        let spaced = tmp.path().join("a b");
        std::fs::create_dir(&spaced).unwrap();
        let file = spaced.join("f g");
        std::fs::write(&file, "attached\n").unwrap();
        let units: Vec<(String, String)> = (0..12)
            .map(|i| {
                (
                    format!("u{i}"),
                    format!(
                        "printf '%s' {i}; echo e{i} >&2; np_cat {}; exit {}",
                        quote(file.to_str().unwrap()),
                        i % 3
                    ),
                )
            })
            .collect();
        let body = build_script("t", &units, false, &[]);
        let path = logging_tools(tools.path());
        let out = run(format!("{path}TMPDIR='{}'\n{body}", spaced.display()));
        let res = parse_frames("t", &out, &ids(&units)).unwrap();
        assert_eq!(res.len(), 12);
        assert_eq!(res["u0"].stdout, "09\nattached\n");
        assert_eq!(
            res["u11"],
            ProbeResult {
                rc: 2,
                stdout: "119\nattached\n".into(),
                stderr: "e11\n".into()
            }
        );
        assert_eq!(logged(tools.path()), ["cat", "mktemp", "rm", "wc"]);
    }

    #[test]
    fn an_apply_unit_that_prints_nothing_is_framed_without_a_process() {
        let tools = tempfile::tempdir().unwrap();
        let units: Vec<(String, String)> = (0..6)
            .map(|i| (format!("u{i}"), format!("[ {i} != 5 ] || echo said")))
            .collect();
        let body = build_script("t", &units, true, &[]);
        let path = logging_tools(tools.path());
        let out = run(format!("{path}{body}"));
        let (res, _) = complete_frames("t", &out, &ids(&units));
        assert_eq!(res.len(), 6);
        assert_eq!(res["u0"], ProbeResult::default());
        assert_eq!(res["u5"].stdout, "said\n");
        assert_eq!(logged(tools.path()), ["cat", "mktemp", "rm", "wc"]);
        // Each unit has a secret of its own for the temp files it writes.
        let secrets: std::collections::HashSet<&str> =
            body.lines().filter(|l| l.starts_with("np_r=")).collect();
        assert_eq!(secrets.len(), 6);
    }

    #[test]
    fn a_probe_script_without_units_answers_an_empty_table() {
        let out = run(build_script("t", &[], false, &[]));
        assert_eq!(out, b"@@NP t table 0\n");
        assert!(parse_frames("t", &out, &[]).unwrap().is_empty());
    }

    #[test]
    fn a_table_cut_short_keeps_the_outputs_that_arrived_whole() {
        let units = vec![
            ("1".to_string(), "echo one".to_string()),
            ("2".to_string(), "echo two".to_string()),
        ];
        let out = run(build_script("t", &units, false, &[]));
        assert!(
            out.starts_with(b"@@NP t table 2\n"),
            "{}",
            String::from_utf8_lossy(&out)
        );
        let cut = &out[..out.len() - 2];
        assert!(parse_frames("t", cut, &ids(&units)).is_err());
        let (whole, _) = complete_frames("t", cut, &ids(&units));
        assert_eq!(whole.keys().collect::<Vec<_>>(), ["1"]);
        let mut extra = out.clone();
        extra.extend(b"x");
        assert!(parse_frames("t", &extra, &ids(&units)).is_err());
    }

    /// `printf` text that prints exactly `bytes`.
    fn printf_of(bytes: &[u8]) -> String {
        let octal: String = bytes.iter().map(|b| format!("\\{b:03o}")).collect();
        format!("printf '{octal}'")
    }

    #[test]
    fn outputs_and_attached_files_arrive_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let files: [(&str, &[u8]); 7] = [
            ("nul", b"a\0b\0"),
            ("trailing", b"x\n\n\n"),
            ("no final newline", b"y"),
            ("empty", b""),
            ("it's", b"@@NP t 0 0 9 9\n"),
            ("new\nline", b"z\n"),
            ("latin1", b"\xe9t\xe9\n"),
        ];
        let mut paths = Vec::new();
        for (name, bytes) in files {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            paths.push(quote(path.to_str().unwrap()));
        }
        let units = vec![
            (
                "all".to_string(),
                format!("printf 'own\\0'; np_cat {}", paths.join(" ")),
            ),
            (
                "relative".to_string(),
                format!("cd {} && np_cat nul", quote(dir.path().to_str().unwrap())),
            ),
            (
                "missing".to_string(),
                "np_cat /nonexistent/np-file".to_string(),
            ),
            (
                "raw".to_string(),
                printf_of(b"\0a\n\n") + "; printf 'e\\0' >&2",
            ),
            ("silent".to_string(), "true".to_string()),
        ];
        let out = run(build_script("t", &units, false, &[]));
        let res = parse_frames("t", &out, &ids(&units)).unwrap();
        let contents: Vec<u8> = files[..6]
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        // A file that is not UTF-8 text comes base64-encoded, sized `b<length>`.
        let want = [b"own\0".as_slice(), b"4 4 1 0 15 2 b8\n", &contents].concat();
        let latin1 = "6XTpCg==";
        assert_eq!(res["all"].stdout, String::from_utf8_lossy(&want) + latin1);
        assert_eq!(
            uncarry("b8", latin1),
            Some(Carried::Bytes(b"\xe9t\xe9\n".to_vec()))
        );
        assert_eq!(res["all"].rc, 0);
        assert_eq!(res["relative"].stdout, "4\na\0b\0");
        assert_eq!(res["missing"].rc, 1);
        assert_eq!(res["missing"].stdout, "");
        assert!(
            res["missing"].stderr.contains("np-file"),
            "{:?}",
            res["missing"]
        );
        assert_eq!(res["raw"].stdout, "\0a\n\n");
        assert_eq!(res["raw"].stderr, "e\0");
        assert_eq!(res["silent"], ProbeResult::ok(""));
    }

    /// A file that grows between the `wc` and the `cat` of the framing
    /// fails the units that attached files; the others keep their answers.
    #[test]
    fn attached_files_that_changed_fail_only_their_units() {
        let out = b"@@NP t table 3\n@@NP t 0 0 1 0 3\n@@NP t 1 0 1 0\n@@NP t 2 0 0 0 1\nabxyzwv";
        let ids = ["a", "b", "c"].map(String::from);
        let res = parse_frames("t", out, &ids).unwrap();
        assert_eq!(res["b"], ProbeResult::ok("b"));
        for id in ["a", "c"] {
            assert_eq!(res[id].rc, CHANGED_WHILE_READ);
            assert!(res[id].stderr.contains("changed while"), "{:?}", res[id]);
        }
        let whole = b"@@NP t table 2\n@@NP t 0 0 1 0 3\n@@NP t 1 0 1 0\nabxyz";
        let res = parse_frames("t", whole, &ids[..2]).unwrap();
        assert_eq!(res["a"], ProbeResult::ok("a3\nxyz"));
        let stream = b"@@NP t 0 0 1 0 3\na";
        assert!(parse_frames("t", stream, &ids).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(24))]

        /// Whatever bytes a unit prints or a file holds come back exactly.
        #[test]
        fn any_bytes_round_trip(
            outs in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40), 1..4),
            file in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            std::fs::write(&path, &file).unwrap();
            let units: Vec<(String, String)> = outs
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("u{i}"), format!("{}; np_cat {}", printf_of(o), path.display())))
                .collect();
            let out = run(build_script("t", &units, false, &[]));
            let res = parse_frames("t", &out, &ids(&units)).unwrap();
            let (size, text) = carry(&file);
            for (i, o) in outs.iter().enumerate() {
                let want = format!("{}{size}\n{text}", String::from_utf8_lossy(o));
                proptest::prop_assert_eq!(&res[&format!("u{i}")].stdout, &want);
            }
            let back = match uncarry(&size, &text) {
                Some(Carried::Text(t)) => t.as_bytes().to_vec(),
                Some(Carried::Bytes(b)) => b,
                None => Vec::new(),
            };
            proptest::prop_assert_eq!(back, file);
        }
    }

    #[test]
    fn fake_answer_round_trips() {
        let units = vec![("k:1".to_string(), "anything".to_string())];
        let script = build_script("zz", &units, false, &[]);
        let out = fake_answer(&script, |id| ProbeResult::ok(format!("answer {id}")));
        assert_eq!(
            parse_frames("zz", &out, &ids(&units)).unwrap()["k:1"].stdout,
            "answer k:1"
        );
    }
}
