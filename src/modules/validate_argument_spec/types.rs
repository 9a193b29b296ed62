//! The type checkers of an argument spec (`DEFAULT_TYPE_VALIDATORS` in
//! ansible-core's module_utils/common/parameters.py): each converts a
//! value as Ansible converts it, or says why not in Ansible's words.

use serde_json::{Map, Value};

use crate::base::python::{class, float_repr, repr, str_of};

/// `value` converted to `wanted` (`str`, `int`, `list`...).
pub(super) fn convert(wanted: &str, v: &Value) -> Result<Value, String> {
    match wanted {
        "str" => Ok(Value::String(to_str(v))),
        "list" => to_list(v),
        "dict" => to_dict(v),
        "bool" => to_bool(v).map(Value::Bool),
        "int" => to_int(v),
        "float" => to_float(v),
        "path" => Ok(Value::String(expand_path(&to_str(v)))),
        "raw" => Ok(v.clone()),
        "jsonarg" | "json" => to_json_text(v).map(Value::String),
        "bytes" => human_to_bytes(&str_of(v), false)
            .map(Value::from)
            .ok_or_else(|| format!("{} cannot be converted to a Byte value", class(v))),
        "bits" => human_to_bytes(&str_of(v), true)
            .map(Value::from)
            .ok_or_else(|| format!("{} cannot be converted to a Bit value", class(v))),
        // Ansible looks the name up and calls what it found: nothing.
        _ => Err("'NoneType' object is not callable".into()),
    }
}

fn to_str(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => str_of(other),
    }
}

fn to_list(v: &Value) -> Result<Value, String> {
    match v {
        Value::Array(_) => Ok(v.clone()),
        Value::String(s) => Ok(s.split(',').map(|p| Value::String(p.into())).collect()),
        Value::Number(_) | Value::Bool(_) => Ok(Value::Array(vec![Value::String(str_of(v))])),
        _ => Err(format!("{} cannot be converted to a list", class(v))),
    }
}

fn to_dict(v: &Value) -> Result<Value, String> {
    let Value::String(s) = v else {
        return match v {
            Value::Object(_) => Ok(v.clone()),
            _ => Err(format!("{} cannot be converted to a dict", class(v))),
        };
    };
    if s.starts_with('{') {
        // Ansible then tries a Python literal; a JSON object is what
        // YAML and templates hand over.
        return match serde_json::from_str::<Value>(s) {
            Ok(d @ Value::Object(_)) => Ok(d),
            _ => Err("unable to evaluate string as dictionary".into()),
        };
    }
    if !s.contains('=') {
        return Err("dictionary requested, could not parse JSON or key=value".into());
    }
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in s.trim().chars() {
        if escaped {
            field.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if quote.is_none() && (c == '\'' || c == '"') {
            quote = Some(c);
        } else if quote == Some(c) {
            quote = None;
        } else if quote.is_none() && (c == ',' || c == ' ') {
            if !field.is_empty() {
                fields.push(std::mem::take(&mut field));
            }
        } else {
            field.push(c);
        }
    }
    if !field.is_empty() {
        fields.push(field);
    }
    let mut out = Map::new();
    for f in fields {
        let Some((k, v)) = f.split_once('=') else {
            return Err(
                "unable to evaluate string in the \"key=value\" format as dictionary".into(),
            );
        };
        out.insert(k.into(), Value::String(v.into()));
    }
    Ok(Value::Object(out))
}

const TRUE_WORDS: [&str; 6] = ["y", "yes", "on", "1", "true", "t"];
const FALSE_WORDS: [&str; 6] = ["n", "no", "off", "0", "false", "f"];

/// Ansible's `boolean()`, strict.
pub(super) fn to_bool(v: &Value) -> Result<bool, String> {
    let word = match v {
        Value::Bool(b) => return Ok(*b),
        Value::String(s) => s.trim().to_lowercase(),
        Value::Number(n) => match n.as_f64() {
            Some(1.0) => return Ok(true),
            Some(0.0) => return Ok(false),
            _ => String::new(),
        },
        _ => return Err(format!("{} cannot be converted to a bool", class(v))),
    };
    if TRUE_WORDS.contains(&word.as_str()) {
        return Ok(true);
    }
    if FALSE_WORDS.contains(&word.as_str()) {
        return Ok(false);
    }
    // Ansible lists a frozenset, in an order that changes per process.
    let valid: Vec<String> = TRUE_WORDS
        .iter()
        .map(|w| format!("'{w}'"))
        .chain(["1".into()])
        .chain(FALSE_WORDS.iter().map(|w| format!("'{w}'")))
        .chain(["0".into()])
        .collect();
    Err(format!(
        "The value '{}' is not a valid boolean. Valid booleans include: {}",
        str_of(v),
        valid.join(", ")
    ))
}

/// Python's `int(Decimal(value))` when no decimal part is lost.
fn to_int(v: &Value) -> Result<Value, String> {
    let whole =
        |f: f64| (f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64);
    let converted = match v {
        Value::Bool(_) => return Ok(v.clone()),
        Value::Number(n) if !n.is_f64() => return Ok(v.clone()),
        Value::Number(n) => n.as_f64().and_then(whole),
        Value::String(s) => {
            let text: String = s.trim().chars().filter(|c| *c != '_').collect();
            text.parse::<i64>().ok().or_else(|| {
                decimal_text(&text)
                    .then(|| text.parse::<f64>().ok().and_then(whole))
                    .flatten()
            })
        }
        _ => None,
    };
    converted
        .map(Value::from)
        .ok_or_else(|| format!("\"{}\" cannot be converted to an int", repr(v)))
}

/// What Python's `Decimal` reads as a finite number.
fn decimal_text(text: &str) -> bool {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (body, None),
    };
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((a, b)) => digits(a) && digits(b) && !(a.is_empty() && b.is_empty()),
        None => !mantissa.is_empty() && digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| !e.is_empty() && digits(e))
}

fn to_float(v: &Value) -> Result<Value, String> {
    let f = match v {
        Value::Number(n) if n.is_f64() => return Ok(v.clone()),
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::String(s) => {
            let text: String = s.trim().chars().filter(|c| *c != '_').collect();
            text.parse::<f64>().ok()
        }
        _ => None,
    };
    match f {
        // JSON has no NaN or infinity; the text stands for them.
        Some(f) => Ok(serde_json::Number::from_f64(f)
            .map_or_else(|| Value::String(float_repr(f)), Value::Number)),
        None => Err(format!("{} cannot be converted to a float", class(v))),
    }
}

/// `os.path.expanduser(os.path.expandvars(value))`, on the controller.
fn expand_path(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        match std::env::var(name) {
            Ok(value) if !name.is_empty() => out.push_str(&value),
            _ => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    match (out.strip_prefix('~'), std::env::var("HOME")) {
        (Some(tail), Ok(home)) if tail.is_empty() || tail.starts_with('/') => {
            format!("{home}{tail}")
        }
        _ => out,
    }
}

/// `json.dumps` with Python's default separators and ASCII escapes.
fn to_json_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.trim().to_string()),
        Value::Array(_) | Value::Object(_) => Ok(python_json(v)),
        _ => Err(format!("{} cannot be converted to a json string", class(v))),
    }
}

fn python_json(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let mut out = String::new();
            for c in serde_json::to_string(s)
                .expect("a string serialises")
                .chars()
            {
                match c as u32 {
                    n if n < 0x80 => out.push(c),
                    _ => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            out.push_str(&format!("\\u{u:04x}"));
                        }
                    }
                }
            }
            out
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_json).collect();
            format!("[{}]", inner.join(", "))
        }
        Value::Object(map) => {
            let inner: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        python_json(&Value::String(k.clone())),
                        python_json(v)
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        other => other.to_string(),
    }
}

/// Ansible's `human_to_bytes`: `10M`, `1.5 GB`, `8Mb` (bits).
fn human_to_bytes(text: &str, bits: bool) -> Option<i64> {
    let trimmed = text.trim_end();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim_start();
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && !number.ends_with('.')
        && unit.chars().all(|c| c.is_ascii_alphabetic());
    if !number_ok {
        return None;
    }
    let num: f64 = number.parse().ok()?;
    if unit.is_empty() {
        return Some(num.round_ties_even() as i64);
    }
    const RANGES: &str = "BKMGTPEZY";
    let key = unit.chars().next()?.to_ascii_uppercase();
    let power = RANGES.find(key)?;
    if unit.len() > 1 {
        const NAMES: [&str; 9] = [
            "", "kilo", "mega", "giga", "tera", "peta", "exa", "zeta", "yotta",
        ];
        let (class, name) = if bits { ('b', "bit") } else { ('B', "byte") };
        let long = format!("{}{name}", NAMES[power]);
        let short = match power {
            0 => class.to_string(),
            _ => format!("{key}{class}"),
        };
        if unit.to_lowercase() != long && unit != short {
            return None;
        }
    }
    Some((num * 2f64.powi(10 * power as i32)).round_ties_even() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_convert_as_ansibles_type_checkers_convert_them() {
        assert_eq!(convert("int", &json!("42")), Ok(json!(42)));
        assert_eq!(convert("int", &json!(" 1e3 ")), Ok(json!(1000)));
        assert_eq!(
            convert("int", &json!("4.5")),
            Err("\"'4.5'\" cannot be converted to an int".into())
        );
        assert_eq!(convert("int", &json!(true)), Ok(json!(true)));
        assert_eq!(convert("list", &json!("a,b")), Ok(json!(["a", "b"])));
        assert_eq!(convert("list", &json!(3)), Ok(json!(["3"])));
        assert_eq!(convert("str", &json!(["a", 1])), Ok(json!("['a', 1]")));
        assert_eq!(convert("str", &json!(null)), Ok(json!("")));
        assert_eq!(
            convert("dict", &json!("a=1 b='x y'")),
            Ok(json!({"a": "1", "b": "x y"}))
        );
        assert_eq!(
            convert("dict", &json!("a=1 b")),
            Err("unable to evaluate string in the \"key=value\" format as dictionary".into())
        );
        assert_eq!(convert("bool", &json!("Yes")), Ok(json!(true)));
        assert!(convert("bool", &json!("maybe"))
            .unwrap_err()
            .starts_with("The value 'maybe' is not a valid boolean."));
        assert_eq!(convert("float", &json!("2")), Ok(json!(2.0)));
        assert_eq!(
            convert("json", &json!({"a": "é"})),
            Ok(json!("{\"a\": \"\\u00e9\"}"))
        );
        assert_eq!(convert("bytes", &json!("1K")), Ok(json!(1024)));
        assert_eq!(convert("bytes", &json!("2 MB")), Ok(json!(2 << 20)));
        assert_eq!(convert("bits", &json!("1Mb")), Ok(json!(1 << 20)));
        assert!(convert("bytes", &json!("1Mb")).is_err());
        assert_eq!(
            convert("nonsense", &json!(1)),
            Err("'NoneType' object is not callable".into())
        );
    }
}
