//! Jinja's own filters and tests where minijinja's answer differs from
//! what Python's Jinja gives under Ansible: an undefined value fails a
//! filter instead of reading as empty, None is not iterable, strings and
//! mappings are sequences, and text is escaped and dumped as Python does.

use minijinja::value::{Kwargs, Rest, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};

use super::filters::{defined, text};
use super::json_emit::{self, Style};

pub(super) fn register(env: &mut Environment<'static>) {
    use minijinja::filters as jinja;
    // Builtins kept, behind the check Python makes of their input.
    let guarded = [
        ("indent", Value::from_function(jinja::indent), Input::Text),
        ("list", Value::from_function(jinja::list), Input::Iterable),
        ("join", Value::from_function(jinja::join), Input::Iterable),
        ("sum", Value::from_function(jinja::sum), Input::Iterable),
        ("sort", Value::from_function(jinja::sort), Input::Iterable),
        ("min", Value::from_function(jinja::min), Input::Iterable),
        ("max", Value::from_function(jinja::max), Input::Iterable),
        ("first", Value::from_function(jinja::first), Input::Iterable),
        ("last", Value::from_function(jinja::last), Input::Iterable),
        (
            "reverse",
            Value::from_function(jinja::reverse),
            Input::Iterable,
        ),
        (
            "length",
            Value::from_function(jinja::length),
            Input::Iterable,
        ),
        (
            "count",
            Value::from_function(jinja::length),
            Input::Iterable,
        ),
    ];
    for (name, builtin, input) in guarded {
        env.add_filter(
            name,
            move |state: &mut State,
                  value: Value,
                  rest: Rest<Value>,
                  kwargs: Kwargs|
                  -> Result<Value, Error> {
                let wrong = match (input, defined(&value)?.kind()) {
                    (Input::Iterable, ValueKind::None) => true,
                    (Input::Text, kind) => !matches!(kind, ValueKind::String),
                    _ => false,
                };
                if wrong {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!(
                            "{name} cannot take a '{}' object",
                            super::missing::python_type(&value)
                        ),
                    ));
                }
                let mut args = vec![value];
                args.extend(rest.0);
                // `sort(attribute='key')`: the builtin reads its own keywords.
                if kwargs.args().next().is_some() {
                    args.push(Value::from(kwargs));
                }
                builtin.call(state, &args)
            },
        );
    }
    let format = Value::from_function(jinja::format);
    env.add_filter(
        "format",
        move |state: &mut State, value: Value, rest: Rest<Value>| -> Result<Value, Error> {
            // `soft_str(value) % args`: any value formats as its text.
            let mut args = vec![Value::from(text(&value)?.into_owned())];
            args.extend(rest.0);
            format.call(state, &args)
        },
    );
    env.add_filter("escape", escape);
    env.add_filter("e", escape);
    env.add_filter("tojson", tojson);
    env.add_filter("pprint", pprint);
    env.add_test("odd", |v: &Value| parity(v, "odd").map(|p| p == 1.0));
    env.add_test("even", |v: &Value| parity(v, "even").map(|p| p == 0.0));
    env.add_test("sequence", sequence);
    env.add_test("iterable", iterable);
}

/// What a builtin's Python code takes: anything it iterates (None is not
/// iterable), or text only.
#[derive(Clone, Copy)]
enum Input {
    Iterable,
    Text,
}

/// markupsafe's `escape`, as Jinja's filter: `&#39;` and `&#34;` for quotes.
fn escape(v: &Value) -> Result<Value, Error> {
    if v.is_safe() {
        return Ok(v.clone());
    }
    let mut out = String::new();
    for c in text(v)?.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    Ok(Value::from_safe_string(out))
}

/// Jinja's `tojson`: `json.dumps(sort_keys=True)`, with `<`, `>`, `&` and
/// `'` escaped so the text is safe in HTML.
fn tojson(v: &Value, indent: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = indent.or(kwargs.get("indent")?);
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(defined(v)?)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, e.to_string()))?;
    let style = Style {
        sort_keys: true,
        ..Style::python(indent)
    };
    let dumped = json_emit::dumps(&json, &style)
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\'', "\\u0027");
    Ok(Value::from_safe_string(dumped))
}

/// Jinja's `pprint` of what Ansible hands it: the value's `repr` (a
/// string quoted, as inside a list).
fn pprint(v: &Value) -> Result<String, Error> {
    let listed = Value::from(vec![defined(v)?.clone()]).to_string();
    Ok(listed[1..listed.len() - 1].to_string())
}

/// `value % 2` as Python computes it: a number's remainder (a bool counts
/// as 0 or 1); anything else fails.
fn parity(v: &Value, test: &str) -> Result<f64, Error> {
    let n = match defined(v)?.kind() {
        ValueKind::Bool => f64::from(u8::from(v.is_true())),
        ValueKind::Number => f64::try_from(v.clone())?,
        _ => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "the '{test}' test needs a number, not {}",
                    super::missing::python_type(v)
                ),
            ))
        }
    };
    Ok(n.rem_euclid(2.0))
}

/// Jinja's `sequence`: anything with a length and items, strings and
/// mappings too.
fn sequence(v: &Value) -> Result<bool, Error> {
    Ok(matches!(
        defined(v)?.kind(),
        ValueKind::String | ValueKind::Seq | ValueKind::Map | ValueKind::Bytes
    ))
}

/// Jinja's `iterable`: what Python's `iter()` takes.
fn iterable(v: &Value) -> Result<bool, Error> {
    Ok(matches!(
        defined(v)?.kind(),
        ValueKind::String
            | ValueKind::Seq
            | ValueKind::Map
            | ValueKind::Iterable
            | ValueKind::Bytes
    ))
}

/// Python's methods of values that minijinja's pycompat lacks
/// (`list.index`), then pycompat's own.
pub(super) fn python_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let is_list = matches!(value.kind(), ValueKind::Seq);
    match method {
        "index" if is_list => {
            let (wanted, start, end): (Value, Option<i64>, Option<i64>) =
                minijinja::value::from_args(args)?;
            let items: Vec<Value> = value.try_iter()?.collect();
            let bound = |i: Option<i64>, default: usize| match i {
                None => default,
                Some(i) if i < 0 => items.len().saturating_sub(i.unsigned_abs() as usize),
                Some(i) => (i as usize).min(items.len()),
            };
            let (from, to) = (bound(start, 0), bound(end, items.len()));
            (from..to)
                .find(|&i| items[i] == wanted)
                .map(Value::from)
                .ok_or_else(|| {
                    let json = serde_json::to_value(&wanted).unwrap_or_default();
                    let shown = crate::base::python::repr(&json);
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("{shown} is not in list"),
                    )
                })
        }
        _ => minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args),
    }
}
