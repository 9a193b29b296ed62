//! JSON text as Python's `json.dumps` writes it, which is what Ansible's
//! `to_json` and `to_nice_json` give: a file rendered from them reads the
//! same byte for byte whichever tool wrote it.

use serde_json::Value as Json;

/// `json.dumps` keywords Ansible's filters pass on.
pub(super) struct Style {
    pub indent: Option<usize>,
    pub sort_keys: bool,
    pub ensure_ascii: bool,
    /// Between items, and between a key and its value.
    pub separators: (String, String),
}

impl Style {
    /// `json.dumps`'s defaults: `", "` between items unless indented.
    pub fn python(indent: Option<usize>) -> Style {
        let item = if indent.is_some() { "," } else { ", " };
        Style {
            indent,
            sort_keys: false,
            ensure_ascii: true,
            separators: (item.into(), ": ".into()),
        }
    }
}

pub(super) fn dumps(v: &Json, style: &Style) -> String {
    let mut out = String::new();
    value(&mut out, v, style, 0);
    out
}

fn value(out: &mut String, v: &Json, style: &Style, depth: usize) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(&number(n)),
        Json::String(s) => string(out, s, style.ensure_ascii),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Object(m) if m.is_empty() => out.push_str("{}"),
        Json::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                separate(out, n, style, depth + 1);
                value(out, item, style, depth + 1);
            }
            close(out, style, depth);
            out.push(']');
        }
        Json::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            if style.sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (n, (k, item)) in entries.into_iter().enumerate() {
                separate(out, n, style, depth + 1);
                string(out, k, style.ensure_ascii);
                out.push_str(&style.separators.1);
                value(out, item, style, depth + 1);
            }
            close(out, style, depth);
            out.push('}');
        }
    }
}

fn separate(out: &mut String, n: usize, style: &Style, depth: usize) {
    if n > 0 {
        out.push_str(&style.separators.0);
    }
    if let Some(step) = style.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', step * depth));
    }
}

fn close(out: &mut String, style: &Style, depth: usize) {
    if let Some(step) = style.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', step * depth));
    }
}

/// Python's `repr` of a float (`1.0`, `1e+16`); integers as they are;
/// JSON's names for what is not a number.
fn number(n: &serde_json::Number) -> String {
    match n.as_f64().filter(|_| n.is_f64()) {
        Some(f) if f.is_nan() => "NaN".into(),
        Some(f) if f.is_infinite() => if f > 0.0 { "Infinity" } else { "-Infinity" }.into(),
        Some(f) => crate::base::python::float_repr(f),
        None => n.to_string(),
    }
}

fn string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (ensure_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_as_pythons_json_dumps() {
        let v: Json = serde_json::from_str(
            r#"{"b": [1, 2.5, 1e16, 1.0, -0.0001, null], "a": "ü\u0001\n€😀", "c": {}}"#,
        )
        .unwrap();
        assert_eq!(
            dumps(&v, &Style::python(None)),
            r#"{"b": [1, 2.5, 1e+16, 1.0, -0.0001, null], "a": "\u00fc\u0001\n\u20ac\ud83d\ude00", "c": {}}"#
        );
        let nice = Style {
            sort_keys: true,
            ..Style::python(Some(2))
        };
        assert_eq!(
            dumps(&v, &nice),
            "{\n  \"a\": \"\\u00fc\\u0001\\n\\u20ac\\ud83d\\ude00\",\n  \"b\": [\n    1,\n    2.5,\n    1e+16,\n    1.0,\n    -0.0001,\n    null\n  ],\n  \"c\": {}\n}"
        );
        let raw = Style {
            ensure_ascii: false,
            ..Style::python(None)
        };
        assert_eq!(dumps(&Json::from("ü"), &raw), "\"ü\"");
    }
}
