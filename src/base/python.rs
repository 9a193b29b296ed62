//! How Python sees a JSON value, as Ansible's messages, argument files and
//! comparisons show it: `str()`, `repr()`, `type().__name__` and `==`
//! (where `True == 1 == 1.0`).

use serde_json::Value;

/// `type(value).__name__`.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `type(value)`, as `%s` prints it.
pub fn class(v: &Value) -> String {
    format!("<class '{}'>", type_name(v))
}

/// `str(value)`.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// `repr(value)`.
pub fn repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => float_repr(f),
            _ => n.to_string(),
        },
        Value::String(s) => string_repr(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(repr).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", string_repr(k), repr(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
    }
}

/// `repr(float)`: the shortest digits that read back, written out for
/// exponents -4..16 (`1.0`, `0.0001`) and as `1e+16`, `1.5e-07` beyond.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&exp) {
        let plain = format!("{f}");
        match plain.contains('.') {
            true => plain,
            false => format!("{plain}.0"),
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Python quotes with `'` unless the text holds one and no `"`.
fn string_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A number as Python compares it: `True` is 1.
fn numeric(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// `a == b`.
pub fn eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| eq(v, w)))
        }
        _ => match (numeric(a), numeric(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// `value in items`.
pub fn contains(items: &[Value], v: &Value) -> bool {
    items.iter().any(|i| eq(i, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_print_and_compare_as_in_python() {
        assert_eq!(
            repr(&json!({"a": [1, 2.0, true, null, "it's"]})),
            r#"{'a': [1, 2.0, True, None, "it's"]}"#
        );
        assert_eq!(str_of(&json!("x")), "x");
        assert_eq!(float_repr(0.5), "0.5");
        assert!(eq(&json!(true), &json!(1)));
        assert!(eq(&json!(1), &json!(1.0)));
        assert!(!eq(&json!("1"), &json!(1)));
        assert_eq!(class(&json!(null)), "<class 'NoneType'>");
    }
}
