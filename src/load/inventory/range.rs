//! Host ranges as Ansible writes them: `gpu-[01:04]`, `rack-[a:c]`,
//! `node[1:10:2]`; several ranges in one name multiply.

/// Letters in the order Python's `string.ascii_letters` has them, which
/// Ansible uses for alphabetic ranges.
const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

pub(super) fn has_range(name: &str) -> bool {
    first_range(name).is_some()
}

/// Hosts one name with ranges may stand for; `h[1:999999999]` would
/// otherwise allocate gigabytes before anything could look at it.
pub const MAX_HOSTS_PER_PATTERN: u64 = 100_000;

/// Every name the ranges in `name` stand for; a name without ranges is
/// itself. The count is checked before any name is made.
pub(super) fn expand(name: &str) -> Result<Vec<String>, String> {
    let count = host_count(name)?;
    if count > MAX_HOSTS_PER_PATTERN {
        return Err(format!(
            "'{}' stands for {} hosts, more than the limit of {MAX_HOSTS_PER_PATTERN}",
            crate::base::diag::clip(name),
            if count == u64::MAX {
                "too many".to_string()
            } else {
                count.to_string()
            }
        ));
    }
    let mut names = Vec::with_capacity(count as usize);
    expand_into(name, &mut names)?;
    Ok(names)
}

/// How many names `name` stands for, saturating at `u64::MAX`.
fn host_count(name: &str) -> Result<u64, String> {
    let mut count = 1u64;
    let mut rest = name;
    while let Some((_, body, tail)) = first_range(rest) {
        count = count.saturating_mul(RangeSpec::parse(body)?.len());
        rest = tail;
    }
    Ok(count)
}

fn expand_into(name: &str, names: &mut Vec<String>) -> Result<(), String> {
    let Some((head, body, tail)) = first_range(name) else {
        names.push(name.to_string());
        return Ok(());
    };
    for item in RangeSpec::parse(body)?.items() {
        expand_into(&format!("{head}{item}{tail}"), names)?;
    }
    Ok(())
}

/// A host entry `name[:port]` expanded into host names, as Ansible's
/// `_expand_hostpattern` does for INI and YAML inventories.
pub(super) fn parse_host_spec(spec: &str) -> Result<(Vec<String>, Option<u16>), String> {
    let (name, port) = split_port(spec);
    Ok((expand(name)?, port))
}

/// Splits `host:22`. Colons inside `[a:b]` ranges do not count, and a name
/// with several colons is an IPv6 address without a port.
pub(super) fn split_port(spec: &str) -> (&str, Option<u16>) {
    let mut depth = 0usize;
    let colons: Vec<usize> = spec
        .char_indices()
        .filter_map(|(i, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth = depth.saturating_sub(1),
                ':' if depth == 0 => return Some(i),
                _ => {}
            }
            None
        })
        .collect();
    if let [colon] = colons[..] {
        if let Ok(port) = spec[colon + 1..].parse() {
            return (&spec[..colon], Some(port));
        }
    }
    (spec, None)
}

/// The first `[...]` holding a colon, split into (head, inside, tail).
fn first_range(name: &str) -> Option<(&str, &str, &str)> {
    let open = name.find('[')?;
    let close = open + name[open..].find(']')?;
    let body = &name[open + 1..close];
    body.contains(':')
        .then(|| (&name[..open], body, &name[close + 1..]))
}

/// One `[begin:end:step]`, checked.
enum RangeSpec {
    Letters {
        begin: usize,
        end: usize,
        step: usize,
    },
    Numbers {
        begin: u64,
        end: u64,
        step: usize,
        width: usize,
    },
}

impl RangeSpec {
    fn parse(body: &str) -> Result<RangeSpec, String> {
        let parts: Vec<&str> = body.split(':').collect();
        let (begin, end, step) = match parts[..] {
            [b, e] => (b, e, "1"),
            [b, e, s] => (b, e, s),
            _ => {
                return Err(format!(
                    "range [{body}] must be [begin:end] or [begin:end:step]"
                ))
            }
        };
        let begin = if begin.is_empty() { "0" } else { begin };
        if end.is_empty() {
            return Err(format!("range [{body}] has no end value"));
        }
        let step: usize = match step.parse() {
            Ok(s) if s > 0 => s,
            _ => return Err(format!("range [{body}] has an invalid step '{step}'")),
        };
        if let (Some(b), Some(e)) = (letter_index(begin), letter_index(end)) {
            if b > e {
                return Err(format!("range [{body}] must have begin <= end"));
            }
            return Ok(RangeSpec::Letters {
                begin: b,
                end: e,
                step,
            });
        }
        // A leading zero asks for zero-padding to the begin value's width.
        let width = if begin.len() > 1 && begin.starts_with('0') {
            if begin.len() != end.len() {
                return Err(format!(
                    "range [{body}] must have begin and end of equal length when zero-padded"
                ));
            }
            begin.len()
        } else {
            0
        };
        let (b, e): (u64, u64) = match (begin.parse(), end.parse()) {
            (Ok(b), Ok(e)) => (b, e),
            _ => return Err(format!("range [{body}] needs numbers or single letters")),
        };
        if b > e {
            return Err(format!("range [{body}] must have begin <= end"));
        }
        Ok(RangeSpec::Numbers {
            begin: b,
            end: e,
            step,
            width,
        })
    }

    fn len(&self) -> u64 {
        let (span, step) = match *self {
            RangeSpec::Letters { begin, end, step } => ((end - begin) as u64, step),
            RangeSpec::Numbers {
                begin, end, step, ..
            } => (end - begin, step),
        };
        (span / step as u64).saturating_add(1)
    }

    fn items(&self) -> Vec<String> {
        match *self {
            RangeSpec::Letters { begin, end, step } => LETTERS[begin..=end]
                .chars()
                .step_by(step)
                .map(String::from)
                .collect(),
            RangeSpec::Numbers {
                begin,
                end,
                step,
                width,
            } => (begin..=end)
                .step_by(step)
                .map(|n| format!("{n:0width$}"))
                .collect(),
        }
    }
}

fn letter_index(s: &str) -> Option<usize> {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_ascii_alphabetic() => LETTERS.find(c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str) -> Vec<String> {
        expand(name).unwrap()
    }

    #[test]
    fn numeric_ranges_keep_zero_padding() {
        assert_eq!(ok("gpu-[01:04]"), ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]);
        assert_eq!(ok("n[8:10]"), ["n8", "n9", "n10"]);
        assert_eq!(ok("n[:2]"), ["n0", "n1", "n2"]);
    }

    #[test]
    fn strides_letters_and_several_ranges() {
        assert_eq!(ok("n[1:10:4]"), ["n1", "n5", "n9"]);
        assert_eq!(ok("rack-[a:c]"), ["rack-a", "rack-b", "rack-c"]);
        assert_eq!(ok("r[1:2]-g[a:b]"), ["r1-ga", "r1-gb", "r2-ga", "r2-gb"]);
        assert_eq!(ok("[1:2].example.com"), ["1.example.com", "2.example.com"]);
    }

    #[test]
    fn names_without_ranges_are_themselves() {
        assert_eq!(ok("gpu-01"), ["gpu-01"]);
        assert_eq!(ok("gpu[12]"), ["gpu[12]"]);
        assert!(!has_range("gpu-0[1-4]"));
    }

    #[test]
    fn bad_ranges_say_why() {
        assert!(expand("n[1:]").unwrap_err().contains("no end value"));
        assert!(expand("n[3:1]").unwrap_err().contains("begin <= end"));
        assert!(expand("n[01:100]").unwrap_err().contains("equal length"));
        assert!(expand("n[1:4:0]").unwrap_err().contains("invalid step"));
        assert!(expand("n[1:x]")
            .unwrap_err()
            .contains("numbers or single letters"));
        assert!(expand("n[1:2:3:4]").unwrap_err().contains("begin:end"));
    }

    #[test]
    fn ports_split_off_outside_ranges_only() {
        assert_eq!(split_port("gpu-01:2222"), ("gpu-01", Some(2222)));
        assert_eq!(split_port("gpu-[01:04]"), ("gpu-[01:04]", None));
        assert_eq!(split_port("gpu-[01:04]:22"), ("gpu-[01:04]", Some(22)));
        assert_eq!(split_port("fe80::1"), ("fe80::1", None));
        let (names, port) = parse_host_spec("n[1:2]:2200").unwrap();
        assert_eq!((names, port), (vec!["n1".into(), "n2".into()], Some(2200)));
    }

    #[test]
    fn huge_ranges_are_refused_before_allocating() {
        let err = expand("h[1:999999999]").unwrap_err();
        assert!(
            err.contains("999999999 hosts, more than the limit of 100000"),
            "{err}"
        );
        let err = expand("h[1:100000]-[1:100000]").unwrap_err();
        assert!(err.contains("10000000000 hosts"), "{err}");
        let err = expand("h[0:18446744073709551615][0:9]").unwrap_err();
        assert!(err.contains("too many hosts"), "{err}");
        assert_eq!(expand("h[1:100000]").unwrap().len(), 100_000);
        assert_eq!(expand("h[1:1000:10]-[a:e]").unwrap().len(), 500);
    }
}
