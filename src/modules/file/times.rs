//! `access_time` and `modification_time`: `preserve` (nothing to do), `now`
//! (set on every run, as Ansible does) or a local time of the host in the
//! task's `*_time_format`, compared with the path's own and set only when it
//! differs.

use crate::base::shell::quote;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::remote::probe::ProbeResult;

/// Ansible's `access_time_format` and `modification_time_format` default.
pub(super) const DEFAULT_FORMAT: &str = "%Y%m%d%H%M.%S";

/// What one of a path's times must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Time {
    Preserve,
    Now,
    At(Local),
}

/// A date and time to the second in the host's own time zone, as
/// `time.strptime` reads it for Ansible (fields it does not give default
/// as Python's do: 1900-01-01 00:00:00).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Local {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
}

impl Time {
    /// `preserve`, `now`, or `value` read with the strftime `format`.
    pub(super) fn parse(value: &str, format: &str) -> Result<Time, String> {
        match value {
            "preserve" => Ok(Time::Preserve),
            "now" => Ok(Time::Now),
            _ => strptime(value, format).map(Time::At),
        }
    }
}

impl Local {
    /// How `stat -c %x` prints it, up to the seconds.
    fn stat_form(&self) -> String {
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `touch -t`'s form, read in the host's time zone as Ansible's mktime.
    fn touch_form(&self) -> String {
        format!(
            "{:04}{:02}{:02}{:02}{:02}.{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Python's `time.strptime` for the directives a time of day needs:
/// `%Y %y %m %d %H %M %S %%`; any other is refused rather than guessed.
fn strptime(value: &str, format: &str) -> Result<Local, String> {
    let mismatch = || format!("time '{value}' does not match the format '{format}'");
    let mut t = Local {
        year: 1900,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
    };
    let mut rest = value;
    let mut spec = format.chars();
    while let Some(c) = spec.next() {
        if c != '%' {
            rest = rest.strip_prefix(c).ok_or_else(mismatch)?;
            continue;
        }
        let directive = spec.next().unwrap_or('%');
        let (field, max_digits, range) = match directive {
            '%' => {
                rest = rest.strip_prefix('%').ok_or_else(mismatch)?;
                continue;
            }
            'Y' => (&mut t.year, 4, 0..=9999),
            'y' => (&mut t.year, 2, 0..=99),
            'm' => (&mut t.month, 2, 1..=12),
            'd' => (&mut t.day, 2, 1..=31),
            'H' => (&mut t.hour, 2, 0..=23),
            'M' => (&mut t.minute, 2, 0..=59),
            'S' => (&mut t.second, 2, 0..=61),
            other => {
                return Err(format!(
                "the format directive %{other} is not supported; use %Y, %y, %m, %d, %H, %M and %S"
            ))
            }
        };
        let digits = rest
            .bytes()
            .take(max_digits)
            .take_while(u8::is_ascii_digit)
            .count();
        let n: u32 = rest[..digits].parse().map_err(|_| mismatch())?;
        if !range.contains(&n) {
            return Err(mismatch());
        }
        // Python maps two-digit years 69-99 to 19xx and 0-68 to 20xx.
        *field = match directive {
            'y' if n >= 69 => 1900 + n,
            'y' => 2000 + n,
            _ => n,
        };
        rest = &rest[digits..];
    }
    match rest.is_empty() {
        true => Ok(t),
        false => Err(mismatch()),
    }
}

/// A path's access and modification times as `stat -c %x` and `%y` print
/// them without the zone (`2024-01-02 03:04:05.000000000`); `None` when
/// the path does not exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Stamps {
    atime: String,
    mtime: String,
}

/// Read only when a task gives a literal time: `now` needs no comparison.
pub(super) struct TimesFact;

impl Fact for TimesFact {
    type Query = str;
    type Value = Option<Stamps>;

    fn key(path: &str) -> String {
        format!("file:times:{path}")
    }

    fn script(path: &str) -> String {
        format!(
            "p={}\n[ -e \"$p\" ] || exit 0\nstat -c '%x|%y' -- \"$p\"",
            quote(path)
        )
    }

    fn parse(path: &str, r: &ProbeResult) -> Result<Option<Stamps>, ModuleError> {
        let bad = || fact::bad(Self::key(path), format!("cannot read: {}", r.stderr.trim()));
        if r.rc != 0 {
            return Err(bad());
        }
        let line = r.stdout.trim_end();
        if line.is_empty() {
            return Ok(None);
        }
        // The zone is the host's own, the one a literal time is read in.
        let local = |s: &str| s.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let (atime, mtime) = line.split_once('|').ok_or_else(bad)?;
        Ok(Some(Stamps {
            atime: local(atime),
            mtime: local(mtime),
        }))
    }

    fn render(v: &Option<Stamps>) -> ProbeResult {
        ProbeResult::ok(match v {
            Some(s) => format!("{}|{}\n", s.atime, s.mtime),
            None => String::new(),
        })
    }
}

/// Whether a stamp is exactly this time: to the second, with no fraction
/// (Ansible compares the float it sets with the one the file has).
fn is_at(stamp: &str, t: &Local) -> bool {
    let Some(fraction) = stamp.strip_prefix(&t.stat_form()) else {
        return false;
    };
    fraction.is_empty()
        || fraction
            .strip_prefix('.')
            .is_some_and(|f| f.bytes().all(|b| b == b'0'))
}

/// The path's wanted access and modification times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Wanted {
    pub atime: Time,
    pub mtime: Time,
}

impl Wanted {
    /// Whether the path's times must be read to know whether they comply.
    pub(super) fn reads(&self) -> bool {
        [&self.atime, &self.mtime]
            .iter()
            .any(|t| matches!(t, Time::At(_)))
    }

    /// Whether a time is `now`, set on every run.
    pub(super) fn moves(&self) -> bool {
        self.atime == Time::Now || self.mtime == Time::Now
    }

    /// The changes, steps and predicted times that give `path` these times;
    /// `created`: the plan makes it, so whatever the host has is replaced.
    pub(super) fn plan(
        &self,
        path: &str,
        facts: &Facts,
        created: bool,
        plan: &mut Plan,
    ) -> Result<(), ModuleError> {
        let have = match (self.reads(), created) {
            (true, false) => TimesFact::read(facts, path)?,
            _ => None,
        };
        let mut after = have.clone();
        let mut changed = false;
        for (name, flag, want, have) in [
            ("atime", "-a", &self.atime, have.as_ref().map(|s| &s.atime)),
            ("mtime", "-m", &self.mtime, have.as_ref().map(|s| &s.mtime)),
        ] {
            let (to, step) = match want {
                Time::Preserve => continue,
                Time::At(t) if have.is_some_and(|h| is_at(h, t)) => continue,
                Time::At(t) => (t.stat_form(), format!("-t {} ", t.touch_form())),
                Time::Now => ("now".to_string(), String::new()),
            };
            plan.changes.push(Change::new(
                format!("{path} {name}"),
                have.cloned(),
                Some(to.clone()),
            ));
            plan.steps.push(format!(
                "touch -c {flag} {step}-- {} || exit 1",
                quote(path)
            ));
            changed = true;
            if let Some(stamps) = after.as_mut() {
                let stamp = match name {
                    "atime" => &mut stamps.atime,
                    _ => &mut stamps.mtime,
                };
                *stamp = format!("{to}.000000000");
            }
        }
        match (changed, after, !self.moves()) {
            (false, _, _) => {}
            (true, Some(after), true) => plan.effects.push(TimesFact::predict(path, &Some(after))),
            _ => plan.effects.push(TimesFact::invalidate(path)),
        }
        Ok(())
    }
}

/// Values of the times fact, for the round trip every fact must pass.
#[cfg(test)]
pub(super) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<TimesFact>("/srv/f", None);
    let stamps = Stamps {
        atime: "2024-01-02 03:04:05.000000000".into(),
        mtime: "2024-01-02 03:04:05.500000000".into(),
    };
    rt.check::<TimesFact>("/srv/f", Some(stamps));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(value: &str) -> Time {
        Time::parse(value, DEFAULT_FORMAT).unwrap()
    }

    #[test]
    fn times_are_read_as_python_strptime_reads_them() {
        let Time::At(t) = at("202401020304.05") else {
            panic!("a time")
        };
        assert_eq!(t.stat_form(), "2024-01-02 03:04:05");
        assert_eq!(t.touch_form(), "202401020304.05");
        assert_eq!(at("now"), Time::Now);
        assert_eq!(at("preserve"), Time::Preserve);
        let custom = Time::parse("24-1-2 3:04:05", "%y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(custom, at("202401020304.05"));
        for (value, format, says) in [
            ("202413020304.05", DEFAULT_FORMAT, "does not match"),
            ("2024010203", DEFAULT_FORMAT, "does not match"),
            ("202401020304.05x", DEFAULT_FORMAT, "does not match"),
            ("Jan 2", "%b %d", "%b is not supported"),
        ] {
            let err = Time::parse(value, format).unwrap_err();
            assert!(err.contains(says), "{value}: {err}");
        }
    }

    #[test]
    fn a_stamp_is_the_time_only_without_a_fraction() {
        let Time::At(t) = at("202401020304.05") else {
            panic!("a time")
        };
        assert!(is_at("2024-01-02 03:04:05.000000000", &t));
        assert!(is_at("2024-01-02 03:04:05", &t));
        assert!(!is_at("2024-01-02 03:04:05.000000001", &t));
        assert!(!is_at("2024-01-02 03:04:06.000000000", &t));
    }
}
