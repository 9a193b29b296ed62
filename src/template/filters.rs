//! Ansible filters, tests and functions that minijinja lacks, or whose
//! builtin behaves differently from what playbook authors expect.

use std::borrow::Cow;

use base64::Engine as _;
use minijinja::value::{Kwargs, Rest, Serde, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State, Value};
use serde_json::{Map, Value as Json};

use super::json_emit::{self, Style};
use super::yaml_emit;
use crate::pyre::{Captures, Flags, MatchError, Regex, Replacement};

/// Installs everything on `env`; builtins not listed here (`default`, `join`,
/// `string`, `items`, `defined`, ...) already match Jinja2.
pub(super) fn register(env: &mut Environment<'static>) {
    env.add_filter("bool", to_bool);
    env.add_filter("int", int);
    env.add_filter("float", float);
    env.add_filter("unique", unique);
    env.add_filter("regex_replace", regex_replace);
    env.add_filter("regex_search", regex_search);
    env.add_filter("regex_findall", regex_findall);
    env.add_filter("to_json", to_json);
    env.add_filter("to_nice_json", to_nice_json);
    env.add_filter("to_yaml", to_yaml);
    env.add_filter("to_nice_yaml", to_nice_yaml);
    env.add_filter("from_json", from_json);
    env.add_filter("basename", basename);
    env.add_filter("dirname", dirname);
    env.add_filter("splitext", splitext);
    env.add_filter("quote", quote);
    env.add_filter("dict2items", dict2items);
    env.add_filter("items2dict", items2dict);
    env.add_filter("mandatory", mandatory);
    env.add_filter("type_debug", type_debug);
    env.add_filter("b64encode", b64encode);
    env.add_filter("b64decode", b64decode);
    env.add_filter("flatten", flatten);
    env.add_filter("combine", combine);
    env.add_filter("difference", difference);
    env.add_filter("union", union);
    env.add_filter("intersect", intersect);
    env.add_filter("product", product);
    env.add_filter("zip", zip);
    env.add_filter("subelements", subelements);
    env.add_filter("comment", comment);
    env.add_filter("ternary", ternary);
    env.add_filter("password_hash", password_hash);
    env.add_filter("random", super::random::random);

    env.add_test("timedout", timedout);
    env.add_test("nan", is_nan);
    env.add_test("isnan", is_nan);
    env.add_test("match", test_match);
    env.add_test("search", test_search);
    env.add_test("truthy", truthy);
    env.add_test("falsy", falsy);
    env.add_test("failed", failed);
    env.add_test("succeeded", succeeded);
    env.add_test("success", succeeded);
    env.add_test("changed", changed);
    env.add_test("skipped", skipped);
    env.add_test("version", version);
    // Its name before Ansible 2.5, still in hardening roles.
    env.add_test("version_compare", version);

    super::lookups::register(env);
    super::paths::register(env);
    super::ipaddr::register(env);
}

// ---- conversions ---------------------------------------------------------

fn invalid(msg: impl Into<Cow<'static, str>>) -> Error {
    Error::new(ErrorKind::InvalidOperation, msg)
}

/// Filters see undefined values (strict mode only fails on use), so each
/// one that consumes its input refuses them explicitly.
pub(super) fn defined(v: &Value) -> Result<&Value, Error> {
    if v.is_undefined() {
        Err(Error::from(ErrorKind::UndefinedError))
    } else {
        Ok(v)
    }
}

/// String view of a value the way Python's `str()` would give it to a filter.
pub(super) fn text(v: &Value) -> Result<Cow<'_, str>, Error> {
    Ok(match defined(v)?.as_str() {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(v.to_string()),
    })
}

pub(super) fn json_of(v: &Value) -> Result<Json, Error> {
    serde_json::to_value(defined(v)?).map_err(|e| invalid(e.to_string()))
}

pub(super) fn value_of(j: &Json) -> Value {
    Value::from(Serde(j))
}

fn json_map(v: &Value, what: &str) -> Result<Map<String, Json>, Error> {
    match json_of(v)? {
        Json::Object(m) => Ok(m),
        other => Err(invalid(format!(
            "{what} expects a mapping, got {}",
            kind(&other)
        ))),
    }
}

/// What Python's `for x in value` walks: a list's items, a string's
/// characters, a mapping's keys. Filters that iterate their input as
/// Ansible's do (`flatten`, `product`, `zip`) take any of them.
fn python_items(v: &Value, what: &str) -> Result<Vec<Json>, Error> {
    match json_of(v)? {
        Json::Array(a) => Ok(a),
        Json::String(s) => Ok(s.chars().map(|c| Json::String(c.into())).collect()),
        Json::Object(m) => Ok(m.into_iter().map(|(k, _)| Json::String(k)).collect()),
        other => Err(invalid(format!(
            "{what}: '{}' object is not iterable",
            crate::base::python::type_name(&other)
        ))),
    }
}

fn json_list(v: &Value, what: &str) -> Result<Vec<Json>, Error> {
    match json_of(v)? {
        Json::Array(a) => Ok(a),
        other => Err(invalid(format!(
            "{what} expects a list, got {}",
            kind(&other)
        ))),
    }
}

fn kind(j: &Json) -> &'static str {
    match j {
        Json::Null => "none",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "list",
        Json::Object(_) => "mapping",
    }
}

/// Ansible's `bool` filter: only these spellings (and 1) count as true.
pub(super) fn ansible_bool(v: &Value) -> bool {
    match v.as_str() {
        Some(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "yes" | "on" | "1" | "true" | "y" | "t"
        ),
        None => match v.kind() {
            ValueKind::Bool => v.is_true(),
            ValueKind::Number => f64::try_from(v.clone()).is_ok_and(|n| n == 1.0),
            _ => false,
        },
    }
}

fn to_bool(v: &Value) -> Result<bool, Error> {
    Ok(ansible_bool(defined(v)?))
}

/// Jinja2's `int`: surrounding whitespace is fine and unparsable input gives
/// the default (0) instead of an error, which `stdout | int` relies on.
fn int(
    state: &State,
    v: &Value,
    default: Option<Value>,
    base: Option<u32>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let default = default.or(kwargs.get("default")?).unwrap_or(Value::from(0));
    minijinja::filters::int(state, &trimmed(v), Some(default), base, kwargs)
}

fn float(state: &State, v: &Value, default: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let default = default
        .or(kwargs.get("default")?)
        .unwrap_or(Value::from(0.0));
    minijinja::filters::float(state, &trimmed(v), Some(default), kwargs)
}

/// A task result its `timeout:` stopped: `timedout.period` set.
fn timedout(result: &Value) -> Result<bool, Error> {
    let result = registered(result, "timedout")?;
    let period = result
        .get_attr("timedout")
        .and_then(|t| t.get_attr("period"));
    Ok(period.is_ok_and(|p| p.is_true()))
}

/// Ansible's `nan` test is Python's `math.isnan`: only a number is NaN,
/// and anything else (a string) is not.
fn is_nan(v: &Value) -> bool {
    v.kind() == minijinja::value::ValueKind::Number
        && f64::try_from(v.clone()).is_ok_and(f64::is_nan)
}

fn trimmed(v: &Value) -> Value {
    match v.as_str() {
        Some(s) => Value::from(s.trim()),
        None => v.clone(),
    }
}

/// Ansible's `unique` hands Jinja2's the truth of `case_sensitive`
/// (`bool(case_sensitive)`): unset, it ignores case as Jinja2's does.
fn unique(state: &State, values: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let case_sensitive = kwargs
        .get::<Option<Value>>("case_sensitive")?
        .is_some_and(|v| v.is_true());
    let attribute = kwargs.get::<Option<Value>>("attribute")?;
    kwargs.assert_all_used()?;
    if values.is_none() || values.is_undefined() {
        return Err(invalid(format!(
            "unique: '{}' object is not iterable",
            super::missing::python_type(&values)
        )));
    }
    let mut pass = vec![("case_sensitive", Value::from(case_sensitive))];
    pass.extend(attribute.map(|a| ("attribute", a)));
    minijinja::filters::unique(state, values, Kwargs::from_iter(pass))
}

// ---- regex ---------------------------------------------------------------

fn build_regex(pattern: &str, kwargs: &Kwargs) -> Result<Regex, Error> {
    let flags = Flags {
        ignore_case: kwargs.get::<Option<bool>>("ignorecase")?.unwrap_or(false),
        multi_line: kwargs.get::<Option<bool>>("multiline")?.unwrap_or(false),
        dot_all: false,
    };
    kwargs.assert_all_used()?;
    Regex::new(pattern, flags).map_err(|e| invalid(format!("invalid regex {pattern:?}: {e}")))
}

fn matched<T>(r: Result<T, MatchError>) -> Result<T, Error> {
    r.map_err(|e| invalid(e.to_string()))
}

/// Ansible's `regex_replace(value, pattern='', replacement='', ...)`:
/// `count` limits the substitutions, and fewer than `mandatory_count`
/// is an error.
fn regex_replace(
    v: &Value,
    pattern: Option<&str>,
    replacement: Option<&str>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let count = kwargs.get::<Option<usize>>("count")?.unwrap_or(0);
    let mandatory = kwargs.get::<Option<usize>>("mandatory_count")?.unwrap_or(0);
    let pattern = pattern.unwrap_or("");
    let re = build_regex(pattern, &kwargs)?;
    let repl = Replacement::new(replacement.unwrap_or(""), &re)
        .map_err(|e| invalid(format!("regex_replace: {e}")))?;
    let (out, n) = matched(repl.replace_n(&re, &text(v)?, count))?;
    if n < mandatory {
        return Err(invalid(format!(
            "'{pattern}' should match {mandatory} times, but matches {n} times"
        )));
    }
    Ok(out)
}

/// Without group arguments: the first match or none.  With `'\\1'` /
/// `'\\g<name>'` arguments: the list of those groups of the first match.
fn regex_search(
    v: &Value,
    pattern: &str,
    groups: Rest<String>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let re = build_regex(pattern, &kwargs)?;
    let haystack = text(v)?;
    let Some(caps) = matched(re.captures(&haystack))? else {
        return Ok(Value::from(()));
    };
    if groups.is_empty() {
        return Ok(Value::from(&caps[0]));
    }
    // As Ansible reads them: `\\g<name>` or `\\N`, one backslash each.
    let mut picked = Vec::new();
    for arg in groups.iter() {
        let group = match arg.strip_prefix('\\') {
            Some(g) if g.starts_with('g') => g
                .strip_prefix("g<")
                .and_then(|n| n.split_once('>'))
                .filter(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace))
                .map(|(name, _)| caps.name(name).map(|m| m.as_str()))
                .ok_or_else(|| invalid(format!("regex_search: bad group reference {arg:?}")))?,
            Some(g) => {
                let digits: String = g.chars().take_while(char::is_ascii_digit).collect();
                let i = digits
                    .parse::<usize>()
                    .map_err(|_| invalid(format!("regex_search: bad group reference {arg:?}")))?;
                if i >= caps.len() {
                    return Err(invalid(format!("regex_search: no such group {i}")));
                }
                caps.get(i).map(|m| m.as_str())
            }
            None => return Err(invalid("regex_search: Unknown argument")),
        };
        picked.push(group.map_or(Value::from(()), Value::from));
    }
    Ok(Value::from(picked))
}

/// Python's `re.findall`: every match, or its one group, or the tuple of
/// its groups (a list here) when the pattern has several.
fn regex_findall(v: &Value, pattern: &str, kwargs: Kwargs) -> Result<Value, Error> {
    let re = build_regex(pattern, &kwargs)?;
    let haystack = text(v)?;
    let group = |caps: &Captures, i| Value::from(caps.get(i).map_or("", |m| m.as_str()));
    let found = matched(re.captures_all(&haystack))?;
    let found = found.iter().map(|caps| match caps.len() {
        1 => group(caps, 0),
        2 => group(caps, 1),
        n => Value::from((1..n).map(|i| group(caps, i)).collect::<Vec<_>>()),
    });
    Ok(Value::from(found.collect::<Vec<_>>()))
}

fn test_match(v: &Value, pattern: &str, kwargs: Kwargs) -> Result<bool, Error> {
    // Python's re.match anchors at the start only.
    let re = build_regex(&format!(r"\A(?:{pattern})"), &kwargs)?;
    matched(re.is_match(&text(v)?))
}

fn test_search(v: &Value, pattern: &str, kwargs: Kwargs) -> Result<bool, Error> {
    matched(build_regex(pattern, &kwargs)?.is_match(&text(v)?))
}

// ---- serialization -------------------------------------------------------

/// Ansible's `to_json`: `json.dumps` with its defaults (ASCII escapes,
/// `", "` between items) unless the template asks otherwise.
fn to_json(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    dumps(v, &kwargs, Style::python(kwargs.get("indent")?))
}

/// Ansible sorts keys and indents by 4 by default.
fn to_nice_json(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent = kwargs.get::<Option<usize>>("indent")?.unwrap_or(4);
    let style = Style {
        sort_keys: true,
        separators: (",".into(), ": ".into()),
        ..Style::python(Some(indent))
    };
    dumps(v, &kwargs, style)
}

fn dumps(v: &Value, kwargs: &Kwargs, mut style: Style) -> Result<String, Error> {
    if let Some(sort) = kwargs.get::<Option<bool>>("sort_keys")? {
        style.sort_keys = sort;
    }
    if let Some(ascii) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        style.ensure_ascii = ascii;
    }
    kwargs.assert_all_used()?;
    Ok(json_emit::dumps(&json_of(v)?, &style))
}

/// Ansible's `to_yaml`: `yaml.dump(default_flow_style=None)`.
fn to_yaml(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    yaml(v, kwargs, 2, true)
}

/// Ansible's `to_nice_yaml`: `yaml.dump(indent=4, default_flow_style=False)`.
fn to_nice_yaml(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    yaml(v, kwargs, 4, false)
}

fn yaml(v: &Value, kwargs: Kwargs, indent: usize, flow_leaves: bool) -> Result<String, Error> {
    let indent = kwargs.get::<Option<usize>>("indent")?.unwrap_or(indent);
    let flow_leaves = match kwargs.get::<Option<Value>>("default_flow_style")? {
        Some(v) if v.is_none() => true,
        Some(v) if v.is_true() => {
            return Err(invalid(
                "default_flow_style=true is not supported natively (false or none)",
            ))
        }
        Some(_) => false,
        None => flow_leaves,
    };
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(true);
    // nodeprov never folds long lines, which is what a wide `width` asks for.
    let _: Option<usize> = kwargs.get("width")?;
    kwargs.assert_all_used()?;
    let style = yaml_emit::Style {
        indent: indent.clamp(2, 9),
        flow_leaves,
        sort_keys,
    };
    Ok(yaml_emit::emit(&json_of(v)?, &style))
}

fn from_json(v: &Value) -> Result<Value, Error> {
    let text = defined(v)?.as_str().ok_or_else(|| {
        invalid(format!(
            "from_json: the JSON object must be str, not {}",
            super::missing::python_type(v)
        ))
    })?;
    let parsed: Json =
        serde_json::from_str(text).map_err(|e| invalid(format!("from_json: invalid JSON: {e}")))?;
    Ok(value_of(&parsed))
}

/// Ansible's `b64encode(encoding='utf-8', urlsafe=False)`.
fn b64encode(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let (engine, encoding) = b64_options(&kwargs)?;
    let text = text(v)?;
    let bytes = match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf16Le => text.encode_utf16().flat_map(u16::to_le_bytes).collect(),
    };
    Ok(engine.encode(bytes))
}

/// Ansible's `b64decode(encoding='utf-8', urlsafe=False)`.
fn b64decode(v: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let (engine, encoding) = b64_options(&kwargs)?;
    let bytes = engine
        .decode(text(v)?.trim())
        .map_err(|e| invalid(format!("b64decode: {e}")))?;
    let not = |what| invalid(format!("b64decode: decoded data is not {what}"));
    match encoding {
        Encoding::Utf8 => String::from_utf8(bytes).map_err(|_| not("UTF-8")),
        Encoding::Utf16Le => {
            let units: Vec<u16> = bytes
                .chunks(2)
                .map(|c| u16::from_le_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                .collect();
            String::from_utf16(&units).map_err(|_| not("UTF-16-LE"))
        }
    }
}

enum Encoding {
    Utf8,
    Utf16Le,
}

fn b64_options(kwargs: &Kwargs) -> Result<(base64::engine::GeneralPurpose, Encoding), Error> {
    let urlsafe = kwargs.get::<Option<bool>>("urlsafe")?.unwrap_or(false);
    let encoding = kwargs.get::<Option<String>>("encoding")?;
    kwargs.assert_all_used()?;
    let encoding = match encoding
        .as_deref()
        .map(|e| e.to_ascii_lowercase().replace('_', "-"))
        .as_deref()
    {
        None | Some("utf-8" | "utf8") => Encoding::Utf8,
        Some("utf-16-le" | "utf-16le") => Encoding::Utf16Le,
        Some(other) => {
            return Err(invalid(format!(
                "b64: encoding '{other}' is not supported natively (utf-8 or utf-16-le)"
            )))
        }
    };
    let engine = match urlsafe {
        true => base64::engine::general_purpose::URL_SAFE,
        false => base64::engine::general_purpose::STANDARD,
    };
    Ok((engine, encoding))
}

// ---- paths and shell -----------------------------------------------------

/// The path a path filter is given: Python's `os.path` takes text only.
fn path_text<'v>(v: &'v Value, what: &str) -> Result<&'v str, Error> {
    defined(v)?.as_str().ok_or_else(|| {
        invalid(format!(
            "{what}: expected a path (str), not {}",
            super::missing::python_type(v)
        ))
    })
}

/// `os.path.basename`: everything after the last slash (empty for `a/`).
fn basename(v: &Value) -> Result<String, Error> {
    let s = path_text(v, "basename")?;
    Ok(s.rsplit('/').next().unwrap_or_default().to_string())
}

/// `os.path.splitext`: the path and its extension (from the last dot of
/// its last component, leading dots not counting), as a pair.
fn splitext(v: &Value) -> Result<Value, Error> {
    let s = path_text(v, "splitext")?;
    let base = s.rfind('/').map_or(0, |i| i + 1);
    let name = &s[base..];
    let dots = name.len() - name.trim_start_matches('.').len();
    let at = name[dots..].rfind('.').map_or(s.len(), |i| base + dots + i);
    Ok(Value::from(vec![s[..at].to_string(), s[at..].to_string()]))
}

/// `os.path.dirname`: up to the last slash, trailing slashes trimmed unless
/// the result would be the root.
fn dirname(v: &Value) -> Result<String, Error> {
    let s = path_text(v, "dirname")?;
    Ok(match s.rfind('/') {
        None => String::new(),
        Some(i) => {
            let head = s[..=i].trim_end_matches('/');
            if head.is_empty() {
                s[..=i].to_string()
            } else {
                head.to_string()
            }
        }
    })
}

/// Python's `shlex.quote`, which Ansible's `quote` is (None quotes as
/// `''`): the same word, written as Python writes it.
fn quote(v: &Value) -> Result<String, Error> {
    let word = match defined(v)?.is_none() {
        true => Cow::Borrowed(""),
        false => text(v)?,
    };
    Ok(crate::base::shell::shlex_quote(&word))
}

// ---- collections ---------------------------------------------------------

fn key_names(kwargs: &Kwargs) -> Result<(String, String), Error> {
    let key = kwargs.get::<Option<String>>("key_name")?;
    let value = kwargs.get::<Option<String>>("value_name")?;
    kwargs.assert_all_used()?;
    Ok((
        key.unwrap_or_else(|| "key".into()),
        value.unwrap_or_else(|| "value".into()),
    ))
}

fn dict2items(v: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let (key_name, value_name) = key_names(&kwargs)?;
    let items: Vec<Json> = json_map(v, "dict2items")?
        .into_iter()
        .map(|(k, val)| {
            let mut item = Map::new();
            item.insert(key_name.clone(), Json::String(k));
            item.insert(value_name.clone(), val);
            Json::Object(item)
        })
        .collect();
    Ok(value_of(&Json::Array(items)))
}

/// Every combination, as lists: `with_nested` and Ansible's `product`
/// (`itertools.product`, `repeat=` included).
fn product(v: &Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let repeat = kwargs.get::<Option<usize>>("repeat")?.unwrap_or(1);
    kwargs.assert_all_used()?;
    let mut columns = vec![python_items(v, "product")?];
    for other in others.iter() {
        columns.push(python_items(other, "product")?);
    }
    let mut rows: Vec<Vec<Json>> = vec![vec![]];
    for column in columns.iter().cycle().take(columns.len() * repeat) {
        rows = rows
            .into_iter()
            .flat_map(|row| {
                column.iter().map(move |x| {
                    let mut r = row.clone();
                    r.push(x.clone());
                    r
                })
            })
            .collect();
    }
    Ok(value_of(&Json::Array(
        rows.into_iter().map(Json::Array).collect(),
    )))
}

/// Lists side by side, as long as the shortest: `with_together`.
fn zip(v: &Value, others: Rest<Value>) -> Result<Value, Error> {
    let mut lists = vec![python_items(v, "zip")?];
    for other in others.iter() {
        lists.push(python_items(other, "zip")?);
    }
    let len = lists.iter().map(Vec::len).min().unwrap_or(0);
    let rows = (0..len)
        .map(|i| Json::Array(lists.iter().map(|l| l[i].clone()).collect()))
        .collect();
    Ok(value_of(&Json::Array(rows)))
}

/// `[item, sub]` for each element of each item's `key` list:
/// `with_subelements`; a dotted key (`a.b.list`) walks nested mappings, as
/// Ansible's does. A missing key is an error unless `skip_missing`.
fn subelements(v: &Value, key: &str, flags: Option<Value>) -> Result<Value, Error> {
    // `skip_missing` as a bool, or as the lookup takes it: `{skip_missing: yes}`.
    let skip_missing = flags.map(|f| match f.kind() {
        minijinja::value::ValueKind::Map => f.get_attr("skip_missing").is_ok_and(|v| v.is_true()),
        _ => f.is_true(),
    });
    // A mapping's values, as Ansible's filter takes them.
    let items = match v.kind() {
        minijinja::value::ValueKind::Map => json_list(
            &Value::from_iter(v.try_iter()?.map(|k| v.get_item(&k).unwrap_or_default())),
            "subelements",
        )?,
        _ => json_list(v, "subelements")?,
    };
    let mut rows = Vec::new();
    for item in items {
        // A skipped task's result (looped over a registered loop) is left out.
        if item.get("skipped").is_some_and(|s| s != &Json::Bool(false)) {
            continue;
        }
        let found = key.split('.').try_fold(&item, |at, part| at.get(part));
        match found {
            Some(Json::Array(subs)) => rows.extend(
                subs.iter()
                    .map(|sub| Json::Array(vec![item.clone(), sub.clone()])),
            ),
            None if skip_missing == Some(true) => {}
            _ => {
                return Err(invalid(format!(
                    "subelements: an item has no list under '{key}'"
                )))
            }
        }
    }
    Ok(value_of(&Json::Array(rows)))
}

/// Ansible's `comment` filter, all of it: a style gives the defaults and
/// each keyword (`decoration`, `prefix`, `prefix_count`, `postfix`,
/// `postfix_count`, `beginning`, `end`, `newline`) overrides its part.
fn comment(text: &str, style: Option<&str>, kwargs: Kwargs) -> Result<String, Error> {
    let (beginning, decoration, end) = match style.unwrap_or("plain") {
        "plain" => ("", "# ", ""),
        "erlang" => ("", "% ", ""),
        "c" => ("", "// ", ""),
        "cblock" => ("/*", " * ", " */"),
        "xml" => ("<!--", " - ", "-->"),
        other => return Err(invalid(format!("comment: unknown style '{other}'"))),
    };
    let word = |name: &str, default: &str| -> Result<String, Error> {
        Ok(kwargs
            .get::<Option<String>>(name)?
            .unwrap_or_else(|| default.to_string()))
    };
    let decoration = word("decoration", decoration)?;
    let newline = word("newline", "\n")?;
    let beginning = word("beginning", beginning)?;
    let end = word("end", end)?;
    let prefix = word("prefix", decoration.trim_end())?;
    let postfix = word("postfix", decoration.trim_end())?;
    let prefix_count = kwargs.get::<Option<usize>>("prefix_count")?.unwrap_or(1);
    let postfix_count = kwargs.get::<Option<usize>>("postfix_count")?.unwrap_or(1);
    kwargs.assert_all_used()?;
    let mut out = String::new();
    if !beginning.is_empty() {
        out.push_str(&format!("{beginning}{newline}"));
    }
    if !prefix.is_empty() {
        let line = match prefix == newline {
            true => newline.clone(),
            false => format!("{prefix}{newline}"),
        };
        out.push_str(&line.repeat(prefix_count));
    }
    let body = format!(
        "{decoration}{}",
        text.replace(&newline, &format!("{newline}{decoration}"))
    );
    // A line holding only the decoration loses its trailing spaces.
    out.push_str(&body.replace(
        &format!("{decoration}{newline}"),
        &format!("{}{newline}", decoration.trim_end()),
    ));
    for _ in 0..postfix_count {
        out.push_str(&format!("{newline}{postfix}"));
    }
    if !end.is_empty() {
        out.push_str(&format!("{newline}{end}"));
    }
    Ok(out)
}

fn items2dict(v: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let (key_name, value_name) = key_names(&kwargs)?;
    let mut out = Map::new();
    for item in json_list(v, "items2dict")? {
        let key = item.get(&key_name);
        let value = item.get(&value_name);
        let (Some(key), Some(value)) = (key, value) else {
            return Err(invalid(format!(
                "items2dict: each item needs '{key_name}' and '{value_name}'"
            )));
        };
        let key = key.as_str().map_or_else(|| key.to_string(), str::to_string);
        out.insert(key, value.clone());
    }
    Ok(value_of(&Json::Object(out)))
}

/// The Python type name Ansible's `type_debug` gives: roles branch on it
/// (`x | type_debug == "list"`). Strings are "str", as ansible-core 2.19+
/// names its template results.
fn type_debug(v: &Value) -> Result<Value, Error> {
    Ok(Value::from(super::missing::python_type(defined(v)?)))
}

fn mandatory(v: &Value, msg: Option<String>) -> Result<Value, Error> {
    match (v.is_undefined(), msg) {
        (false, _) => Ok(v.clone()),
        (true, Some(msg)) => Err(Error::new(ErrorKind::UndefinedError, msg)),
        (true, None) => Err(Error::from(ErrorKind::UndefinedError)),
    }
}

/// Ansible's `flatten`: nulls (and the words `None` and `null`) are left
/// out unless `skip_nulls=false`.
fn flatten(v: &Value, levels: Option<usize>, kwargs: Kwargs) -> Result<Value, Error> {
    fn walk(items: Vec<Json>, levels: Option<usize>, skip_nulls: bool, out: &mut Vec<Json>) {
        for item in items {
            match item {
                Json::Null if skip_nulls => {}
                Json::String(s) if skip_nulls && (s == "None" || s == "null") => {}
                Json::Array(inner) if levels != Some(0) => {
                    walk(inner, levels.map(|l| l - 1), skip_nulls, out);
                }
                other => out.push(other),
            }
        }
    }
    let levels = levels.or(kwargs.get("levels")?);
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    let mut out = Vec::new();
    walk(python_items(v, "flatten")?, levels, skip_nulls, &mut out);
    Ok(value_of(&Json::Array(out)))
}

/// Ansible's `combine(*terms, recursive=False, list_merge='replace')`:
/// the terms flattened one level (a list of mappings combines them), nulls
/// dropped; one term comes back as it is.
fn combine(v: &Value, others: Rest<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let recursive = kwargs.get::<Option<bool>>("recursive")?.unwrap_or(false);
    let list_merge = match kwargs.get::<Option<&str>>("list_merge")? {
        None => ListMerge::Replace,
        Some("replace") => ListMerge::Replace,
        Some("keep") => ListMerge::Keep,
        Some("append") => ListMerge::Append,
        Some("prepend") => ListMerge::Prepend,
        Some("append_rp") => ListMerge::AppendRp,
        Some("prepend_rp") => ListMerge::PrependRp,
        Some(other) => {
            return Err(invalid(format!(
                "'{other}' is not a valid list_merge value (replace, keep, append, prepend, append_rp, prepend_rp)"
            )))
        }
    };
    kwargs.assert_all_used()?;
    let mut terms = Vec::new();
    for term in std::iter::once(v).chain(others.iter()) {
        match json_of(term)? {
            Json::Array(items) => terms.extend(items.into_iter().filter(|i| !i.is_null())),
            Json::Null => {}
            other => terms.push(other),
        }
    }
    let mut terms = terms.into_iter();
    let Some(mut merged) = terms.next() else {
        return Ok(value_of(&Json::Object(Map::new())));
    };
    for term in terms {
        let (Json::Object(into), Json::Object(from)) = (&mut merged, &term) else {
            return Err(invalid(format!(
                "failed to combine variables, expected dicts but got a '{}' and a '{}'",
                crate::base::python::type_name(&merged),
                crate::base::python::type_name(&term)
            )));
        };
        merge(into, from.clone(), recursive, list_merge);
    }
    Ok(value_of(&merged))
}

#[derive(Clone, Copy, PartialEq)]
enum ListMerge {
    Replace,
    Keep,
    Append,
    Prepend,
    AppendRp,
    PrependRp,
}

/// Ansible's `merge_hash`.
fn merge(into: &mut Map<String, Json>, from: Map<String, Json>, recursive: bool, lists: ListMerge) {
    for (key, new) in from {
        let Some(old) = into.get_mut(&key) else {
            into.insert(key, new);
            continue;
        };
        match (old, new) {
            (Json::Object(old), Json::Object(new)) if recursive => merge(old, new, true, lists),
            (Json::Array(old), Json::Array(new)) => match lists {
                ListMerge::Replace => *old = new,
                ListMerge::Keep => {}
                ListMerge::Append => old.extend(new),
                ListMerge::Prepend => *old = new.into_iter().chain(old.drain(..)).collect(),
                ListMerge::AppendRp => {
                    old.retain(|x| !new.contains(x));
                    old.extend(new);
                }
                ListMerge::PrependRp => {
                    old.retain(|x| !new.contains(x));
                    *old = new.into_iter().chain(old.drain(..)).collect();
                }
            },
            (old, new) => *old = new,
        }
    }
}

/// The set filters keep first-seen order, like Ansible's on hashable items.
fn distinct(items: impl IntoIterator<Item = Json>) -> Vec<Json> {
    let mut out: Vec<Json> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn difference(a: &Value, b: &Value) -> Result<Value, Error> {
    let b = json_list(b, "difference")?;
    let kept = json_list(a, "difference")?
        .into_iter()
        .filter(|x| !b.contains(x));
    Ok(value_of(&Json::Array(distinct(kept))))
}

fn intersect(a: &Value, b: &Value) -> Result<Value, Error> {
    let b = json_list(b, "intersect")?;
    let kept = json_list(a, "intersect")?
        .into_iter()
        .filter(|x| b.contains(x));
    Ok(value_of(&Json::Array(distinct(kept))))
}

fn union(a: &Value, b: &Value) -> Result<Value, Error> {
    let mut all = json_list(a, "union")?;
    all.extend(json_list(b, "union")?);
    Ok(value_of(&Json::Array(distinct(all))))
}

// ---- tests ---------------------------------------------------------------

fn truthy(v: &Value, kwargs: Kwargs) -> Result<bool, Error> {
    let convert_bool = kwargs.get::<Option<bool>>("convert_bool")?.unwrap_or(false);
    kwargs.assert_all_used()?;
    let v = defined(v)?;
    Ok(if convert_bool && v.as_str().is_some() {
        ansible_bool(v)
    } else {
        v.is_true()
    })
}

fn falsy(v: &Value, kwargs: Kwargs) -> Result<bool, Error> {
    truthy(v, kwargs).map(|t| !t)
}

/// Registered results carry `failed` / `changed` / `skipped` flags; the
/// tests take a registered result only, as Ansible's do.
fn flag(result: &Value, name: &str) -> Result<bool, Error> {
    let result = registered(result, name)?;
    Ok(result.get_attr(name).is_ok_and(|f| ansible_bool(&f)))
}

/// A registered result, as the result tests take it: defined, a mapping.
fn registered<'v>(result: &'v Value, test: &str) -> Result<&'v Value, Error> {
    let result = defined(result)?;
    if result.kind() != ValueKind::Map {
        return Err(invalid(format!(
            "The '{test}' test expects a dictionary, not {}",
            super::missing::python_type(result)
        )));
    }
    Ok(result)
}

fn failed(result: &Value) -> Result<bool, Error> {
    flag(result, "failed")
}

fn succeeded(result: &Value) -> Result<bool, Error> {
    flag(result, "failed").map(|f| !f)
}

fn changed(result: &Value) -> Result<bool, Error> {
    flag(result, "changed")
}

fn skipped(result: &Value) -> Result<bool, Error> {
    flag(result, "skipped")
}

/// `ansible_distribution_version is version('22.04', '>=')`: compares
/// dotted versions numerically where both parts are numbers.
fn version(v: &Value, other: &Value, op: Option<&str>) -> Result<bool, Error> {
    let ord = compare_versions(&text(v)?, &text(other)?);
    use std::cmp::Ordering::*;
    Ok(match op.unwrap_or("eq") {
        "<" | "lt" => ord == Less,
        "<=" | "le" => ord != Greater,
        ">" | "gt" => ord == Greater,
        ">=" | "ge" => ord != Less,
        "==" | "=" | "eq" => ord == Equal,
        "!=" | "<>" | "ne" => ord != Equal,
        op => return Err(invalid(format!("version: unknown operator {op:?}"))),
    })
}

fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |s: &str| {
        s.split(['.', '-', '_'])
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = (parts(a), parts(b));
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).map_or("0", String::as_str);
        let y = b.get(i).map_or("0", String::as_str);
        let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.cmp(y),
        };
        if ord.is_ne() {
            return ord;
        }
    }
    std::cmp::Ordering::Equal
}

/// `cond | ternary(yes, no, none)`: `none` (when given) for a null value,
/// else `yes` or `no` by truth, as Ansible's filter.
fn ternary(v: &Value, yes: Value, no: Value, none: Option<Value>) -> Result<Value, Error> {
    let v = defined(v)?;
    Ok(match none {
        Some(none) if v.is_none() => none,
        _ if v.is_true() => yes,
        _ => no,
    })
}

/// crypt(3) hashes for `user: password=`. Without a salt one is drawn at
/// random, as Ansible does, so the output then differs on every render.
/// sha256 and md5 are deprecated by the crate but are what existing content
/// (and the hosts' `/etc/shadow`) asks for.
#[allow(deprecated)]
fn password_hash(
    v: &Value,
    scheme: Option<&str>,
    salt: Option<&str>,
    kwargs: Kwargs,
) -> Result<String, Error> {
    let password = text(v)?;
    let scheme = scheme.or(kwargs.get("hashtype")?).unwrap_or("sha512");
    let salt = salt.or(kwargs.get("salt")?);
    let rounds: Option<u32> = kwargs.get("rounds")?;
    kwargs.assert_all_used()?;
    if let Some(bad) = salt.and_then(|s| {
        s.chars()
            .find(|c| !c.is_ascii_alphanumeric() && !"./".contains(*c))
    }) {
        return Err(invalid(format!(
            "password_hash: the salt may only hold letters, digits, '.' and '/', not {bad:?}"
        )));
    }
    // Ansible gives passlib crypt(3)'s rounds when none are asked for, and
    // passlib writes them into the hash (`$6$rounds=656000$...`).
    let setup = |implicit| pwhash::HashSetup {
        salt,
        rounds: rounds.or(implicit),
    };
    let hashed = match scheme {
        "sha512" | "sha512_crypt" => {
            pwhash::sha512_crypt::hash_with(setup(Some(656_000)), password.as_bytes())
        }
        "sha256" | "sha256_crypt" => {
            pwhash::sha256_crypt::hash_with(setup(Some(535_000)), password.as_bytes())
        }
        "md5" | "md5_crypt" => pwhash::md5_crypt::hash_with(setup(None), password.as_bytes()),
        other => {
            return Err(invalid(format!(
                "password_hash: unsupported hash type {other:?} (sha512, sha256 or md5)"
            )))
        }
    };
    hashed.map_err(|e| invalid(format!("password_hash: {e}")))
}
