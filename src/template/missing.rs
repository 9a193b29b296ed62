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
