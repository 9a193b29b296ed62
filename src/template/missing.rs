//! Which attribute or item of a defined value is missing, worded as
//! Ansible words it (`object of type 'list' has no attribute 'Debian'`):
//! minijinja only says that something was undefined.

use minijinja::machinery::{tokenize, Span, Token};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;
use minijinja::{Environment, Value};

use super::chain::{matching_bracket, KEYWORDS};

/// The first `a.b` / `a[k]` link of `source` that is undefined while what
/// it is taken from is defined: the expression up to that link, and why.
pub(super) fn first_missing(
    env: &Environment,
    source: &str,
    in_expr: bool,
    syntax: SyntaxConfig,
    ctx: &Value,
) -> Option<(String, String)> {
    let tokens: Vec<(Token, Span)> = tokenize(source, in_expr, syntax)
        .collect::<Result<_, _>>()
        .ok()?;
    let eval = |expr: &str| {
        env.compile_expression(expr)
            .and_then(|e| e.eval(ctx))
            .unwrap_or(Value::UNDEFINED)
    };
    for i in 0..tokens.len() {
        let Token::Ident(root) = tokens[i].0 else {
            continue;
        };
        if KEYWORDS.contains(&root) || (i > 0 && matches!(tokens[i - 1].0, Token::Dot)) {
            continue;
        }
        let start = tokens[i].1.start_offset as usize;
        let mut owner = eval(root);
        let mut j = i + 1;
        while !owner.is_undefined() {
            if let Some(why) = mapped_attribute_missing(&tokens[j..], &owner) {
                let end = tokens[j..]
                    .iter()
                    .position(|(t, _)| matches!(t, Token::ParenClose))
                    .map_or(source.len(), |k| tokens[j + k].1.end_offset as usize);
                return Some((source[start..end].to_string(), why));
            }
            let (key, end) = match tokens.get(j).map(|t| &t.0) {
                Some(Token::Dot) => match tokens.get(j + 1) {
                    Some((Token::Ident(name), _)) => (Value::from(*name), j + 2),
                    _ => break,
                },
                Some(Token::BracketOpen) => {
                    let Some(close) = matching_bracket(&tokens, j) else {
                        break;
                    };
                    let inner = &source
                        [tokens[j].1.end_offset as usize..tokens[close].1.start_offset as usize];
                    (eval(inner), close + 1)
                }
                _ => break,
            };
            let expr = &source[start..tokens[end - 1].1.end_offset as usize];
            let value = eval(expr);
            if value.is_undefined() && !key.is_undefined() {
                return Some((expr.to_string(), lacks(&owner, &key)));
            }
            owner = value;
            j = end;
        }
    }
    None
}

/// `| map(attribute='a')` without a `default`, applied to `items`: why
/// the first item lacking `a` lacks it.
fn mapped_attribute_missing(rest: &[(Token, Span)], items: &Value) -> Option<String> {
    let words: Vec<&Token> = rest.iter().take(7).map(|(t, _)| t).collect();
    let [Token::Pipe, Token::Ident("map"), Token::ParenOpen, Token::Ident("attribute"), Token::Assign, Token::Str(attr), Token::ParenClose] =
        words[..]
    else {
        return None;
    };
    let key = Value::from(*attr);
    items.try_iter().ok()?.find_map(|item| {
        // A dotted attribute walks down, as Jinja's does.
        let value = attr.split('.').try_fold(item.clone(), |v, part| {
            let key = part.parse::<i64>().map_or(Value::from(part), Value::from);
            v.get_item(&key).ok().filter(|v| !v.is_undefined())
        });
        value.is_none().then(|| lacks(&item, &key))
    })
}

/// Whether a list or map built by the template (not a lazy object such
/// as `hostvars`) holds an undefined value, at any depth.
pub(super) fn holds_undefined(v: &Value) -> bool {
    if let Some(items) = v.downcast_object_ref::<Vec<Value>>() {
        return items.iter().any(|i| i.is_undefined() || holds_undefined(i));
    }
    if let Some(map) = v.downcast_object_ref::<indexmap::IndexMap<Value, Value>>() {
        return map.values().any(|i| i.is_undefined() || holds_undefined(i));
    }
    false
}

/// Why `owner[key]` is undefined, in Ansible's words.
fn lacks(owner: &Value, key: &Value) -> String {
    let what = python_type(owner);
    match (owner.kind(), key.as_i64()) {
        (ValueKind::Seq, Some(n)) => format!("object of type '{what}' has no element {n}"),
        _ => match key.as_str() {
            Some(name) => format!("object of type '{what}' has no attribute '{name}'"),
            None => format!("object of type '{what}' has no element {key}"),
        },
    }
}

/// The Python type Ansible names in its messages.
pub(super) fn python_type(v: &Value) -> &'static str {
    match v.kind() {
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if v.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn missing(source: &str, vars: serde_json::Value) -> Option<(String, String)> {
        let env = Environment::new();
        let ctx = Value::from(minijinja::value::Serde(&vars));
        first_missing(&env, source, true, SyntaxConfig::default(), &ctx)
    }

    #[test]
    fn names_the_first_missing_link_and_the_type_it_was_asked_of() {
        let vars = json!({"svc": ["a", "b"], "m": {"k": {"x": 1}}, "n": 3});
        let found = |s: &str| missing(s, vars.clone()).unwrap();
        assert_eq!(
            found("svc.Debian | upper"),
            (
                "svc.Debian".into(),
                "object of type 'list' has no attribute 'Debian'".into()
            )
        );
        assert_eq!(
            found("m.k['y'].z"),
            (
                "m.k['y']".into(),
                "object of type 'dict' has no attribute 'y'".into()
            )
        );
        assert_eq!(
            found("svc[5]"),
            (
                "svc[5]".into(),
                "object of type 'list' has no element 5".into()
            )
        );
        assert_eq!(found("n.x").1, "object of type 'int' has no attribute 'x'");
        assert_eq!(missing("m.k.x + unknown.y", vars.clone()), None);
    }
}
