//! A small block-style YAML emitter for JSON-shaped values (`to_yaml`).
//! Strings are quoted whenever a plain scalar could be read back as
//! something else, so the output round-trips through any YAML 1.1 parser.

use serde_json::Value as Json;

/// Emits `v` as a YAML document ending in a newline.
pub(super) fn emit(v: &Json, indent: usize) -> String {
    let mut out = String::new();
    block(&mut out, v, 0, indent);
    out
}

fn block(out: &mut String, v: &Json, depth: usize, step: usize) {
    match v {
        Json::Object(m) if !m.is_empty() => {
            for (key, value) in m {
                pad(out, depth);
                out.push_str(&scalar_str(key));
                out.push(':');
                child(out, value, depth + step, step);
            }
        }
        Json::Array(items) if !items.is_empty() => {
            for item in items {
                pad(out, depth);
                out.push('-');
                seq_item(out, item, depth, step);
            }
        }
        other => {
            pad(out, depth);
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

/// Writes the value after `key:`; collections go on the following lines.
fn child(out: &mut String, v: &Json, depth: usize, step: usize) {
    if is_collection(v) {
        out.push('\n');
        block(out, v, depth, step);
    } else {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    }
}

/// Writes the value after `-`; a nested collection starts on the dash line
/// (`- key: v`), its remaining lines aligned under its first.
fn seq_item(out: &mut String, v: &Json, depth: usize, step: usize) {
    if is_collection(v) {
        let inner = depth + 2;
        let mut nested = String::new();
        block(&mut nested, v, inner, step);
        out.push(' ');
        out.push_str(&nested[inner..]);
    } else {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    }
}

fn is_collection(v: &Json) -> bool {
    match v {
        Json::Object(m) => !m.is_empty(),
        Json::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn pad(out: &mut String, depth: usize) {
    out.extend(std::iter::repeat_n(' ', depth));
}

fn scalar(v: &Json) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::String(s) => scalar_str(s),
        Json::Array(_) => "[]".into(),
        Json::Object(_) => "{}".into(),
    }
}

fn scalar_str(s: &str) -> String {
    if s.chars().any(char::is_control) {
        // serde_json's escapes (\n, \t, \uXXXX) are valid YAML double-quoted escapes.
        serde_json::to_string(s).unwrap_or_default()
    } else if needs_quotes(s) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        s.to_string()
    }
}

/// True when a plain scalar would be misread: empty, padded, starting with
/// an indicator, containing `: ` / ` #`, or resolving to a bool, null or
/// number under YAML 1.1 rules.
fn needs_quotes(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~",
    ];
    let first = s.chars().next();
    s.is_empty()
        || s.trim() != s
        || first.is_some_and(|c| "-?:,[]{}#&*!|>'\"%@`".contains(c))
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || RESERVED.contains(&s.to_ascii_lowercase().as_str())
        || looks_numeric(s)
}

fn looks_numeric(s: &str) -> bool {
    let digits = s.trim_start_matches(['+', '-']).replace('_', "");
    s.parse::<f64>().is_ok()
        || digits.starts_with("0x")
        || digits.starts_with("0o")
        || (!digits.is_empty()
            && digits
                .chars()
                .all(|c| c.is_ascii_digit() || c == ':' || c == '.'))
        || matches!(digits.to_ascii_lowercase().as_str(), ".inf" | ".nan")
}
