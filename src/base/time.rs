//! Dates of the controller's clock, in UTC: formatted here rather than with
//! a date crate, since UTC needs no time zone data.

use std::time::{SystemTime, UNIX_EPOCH};

/// The proleptic Gregorian date of a count of days since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Date and time of day of `t` in UTC: (y, m, d, h, mi, s, micros).
fn parts(t: SystemTime) -> (i64, u32, u32, u64, u64, u64, u32) {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let micros = since.subsec_micros();
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, micros)
}

/// RFC 3339 with seconds (`2026-11-30T16:24:25Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let (y, m, d, h, mi, s, _) = parts(t);
    format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// As Python prints a `datetime` (`2026-11-30 16:24:25.123456`), which
/// Ansible's template variables are.
pub fn python_datetime(t: SystemTime) -> String {
    let (y, m, d, h, mi, s, us) = parts(t);
    let time = format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}");
    match us {
        0 => time,
        us => format!("{time}.{us:06}"),
    }
}

/// As Python prints a `timedelta` of this many microseconds
/// (`0:00:03.004512`, `1 day, 2:00:00`).
pub fn python_timedelta(micros: u64) -> String {
    let (secs, us) = (micros / 1_000_000, micros % 1_000_000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let time = format!("{}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    let time = match us {
        0 => time,
        us => format!("{time}.{us:06}"),
    };
    match days {
        0 => time,
        1 => format!("1 day, {time}"),
        n => format!("{n} days, {time}"),
    }
}

/// `t` as Python's `datetime.strftime` writes it, in UTC or in the
/// controller's time zone: `%f` is the microseconds, the rest is the C
/// library's `strftime`, as Python hands it on. None for a format with a
/// NUL in it.
pub fn strftime(t: SystemTime, format: &str, utc: bool) -> Option<String> {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut c_format = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        match (c, c == '%') {
            (_, false) => c_format.push(c),
            (_, true) => match chars.next() {
                Some('f') => c_format.push_str(&format!("{:06}", since.subsec_micros())),
                Some(o) => {
                    c_format.push('%');
                    c_format.push(o);
                }
                None => c_format.push('%'),
            },
        }
    }
    let c_format = std::ffi::CString::new(c_format).ok()?;
    // musl deprecates the alias only to announce a 64-bit time_t, which
    // it already is on the targets nodeprov builds for.
    #[allow(deprecated)]
    let secs = since.as_secs() as libc::time_t;
    // SAFETY: `tm` is plain data that gmtime_r/localtime_r fill from
    // `secs`; strftime writes at most `buf.len()` bytes into `buf` and
    // reads the NUL-terminated format and the filled `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let filled = unsafe {
        match utc {
            true => libc::gmtime_r(&secs, &mut tm),
            false => libc::localtime_r(&secs, &mut tm),
        }
    };
    if filled.is_null() {
        return None;
    }
    let mut buf = vec![0u8; 64 + format.len() * 16];
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c_format.as_ptr(), &tm) };
    buf.truncate(n);
    Some(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn strftime_writes_as_python_does() {
        let t = UNIX_EPOCH + Duration::from_micros(951_782_400_000_042);
        let at = |f| strftime(t, f, true).unwrap();
        assert_eq!(at("%Y-%m-%d %H:%M:%S.%f"), "2000-02-29 00:00:00.000042");
        assert_eq!(at("%d/%m/%y %f"), "29/02/00 000042");
        assert_eq!(at("100%% %%f"), "100% %f");
        assert_eq!(strftime(t, "a\0b", true), None);
    }

    #[test]
    fn timestamps_are_utc() {
        let at = |s| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_796_055_865), "2026-11-30T16:24:25Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        let t = UNIX_EPOCH + Duration::from_micros(951_782_400_000_042);
        assert_eq!(python_datetime(t), "2000-02-29 00:00:00.000042");
        assert_eq!(python_datetime(UNIX_EPOCH), "1970-01-01 00:00:00");
    }

    #[test]
    fn durations_print_as_pythons_timedelta() {
        assert_eq!(python_timedelta(3_250_000), "0:00:03.250000");
        assert_eq!(python_timedelta(0), "0:00:00");
        assert_eq!(python_timedelta(93_600_000_000), "1 day, 2:00:00");
        assert_eq!(python_timedelta(259_205_000_001), "3 days, 0:00:05.000001");
    }
}
