//! Ansible's chained undefined values: `a.b.c | default(x)` and
//! `a.b is defined` hold when `a` (or `a.b`) is undefined, because in
//! Ansible an attribute of an undefined value is undefined and only using
//! it fails. minijinja's strict mode fails at the attribute itself, and its
//! chainable mode would also print undefined values as empty text, which
//! Ansible refuses. So only the chains that feed `default` or a
//! definedness test are rewritten into a call of [`CHAIN`], which walks the
//! attributes and stops at the first undefined one; everywhere else an
//! attribute of an undefined value still fails.

use minijinja::machinery::{tokenize, Span, Token};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::Rest;
use minijinja::Value;

/// The global function chains are rewritten into.
pub(super) const CHAIN: &str = "__nodeprov_undefined_chain";

/// `root[keys[0]][keys[1]]…`, undefined from the first missing link on.
pub(super) fn walk(root: Value, keys: Rest<Value>) -> Value {
    keys.iter()
        .try_fold(root, |v, k| {
            if v.is_undefined() || v.is_none() {
                return None;
            }
            Some(v.get_item(k).unwrap_or(Value::UNDEFINED))
        })
        .unwrap_or(Value::UNDEFINED)
}

/// The source with every chain that feeds `default`/`d` or a
/// `defined`/`undefined` test made a call of [`CHAIN`]; `None` when
/// there is none (or the source does not tokenize: compiling it reports
/// why).
pub(super) fn rewrite(source: &str, in_expr: bool, syntax: SyntaxConfig) -> Option<String> {
    if !["default", "defined", "d("]
        .iter()
        .any(|w| source.contains(w))
    {
        return None;
    }
    let tokens: Vec<(Token, Span)> = tokenize(source, in_expr, syntax)
        .collect::<Result<_, _>>()
        .ok()?;
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < tokens.len() {
        let Some((call, end)) = chain_at(source, &tokens, i) else {
            i += 1;
            continue;
        };
        let start = tokens[i].1.start_offset as usize;
        out.push_str(&source[copied..start]);
        out.push_str(&call);
        copied = tokens[end - 1].1.end_offset as usize;
        i = end;
    }
    (copied > 0).then(|| out + &source[copied..])
}

/// Words that read like a variable but are not one.
pub(super) const KEYWORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "True", "False", "None",
];

/// The call replacing a chain starting at token `i`, and the index of the
/// token after the chain, when the chain has at least one link and feeds
/// `default` or a definedness test.
fn chain_at(source: &str, tokens: &[(Token, Span)], i: usize) -> Option<(String, usize)> {
    let Token::Ident(root) = tokens[i].0 else {
        return None;
    };
    if KEYWORDS.contains(&root) || (i > 0 && matches!(tokens[i - 1].0, Token::Dot)) {
        return None;
    }
    let mut keys = Vec::new();
    let mut j = i + 1;
    loop {
        match tokens.get(j).map(|t| &t.0) {
            Some(Token::Dot) => {
                let Some(Token::Ident(name)) = tokens.get(j + 1).map(|t| &t.0) else {
                    return None;
                };
                keys.push(format!("'{name}'"));
                j += 2;
            }
            Some(Token::BracketOpen) => {
                let close = matching_bracket(tokens, j)?;
                let inner =
                    &source[tokens[j].1.end_offset as usize..tokens[close].1.start_offset as usize];
                keys.push(format!("({inner})"));
                j = close + 1;
            }
            _ => break,
        }
    }
    if keys.is_empty() || !feeds_default(&tokens[j..]) {
        return None;
    }
    Some((format!("{CHAIN}({root}, {})", keys.join(", ")), j))
}

pub(super) fn matching_bracket(tokens: &[(Token, Span)], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, (t, _)) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::BracketOpen => depth += 1,
            Token::BracketClose if depth == 1 => return Some(k),
            Token::BracketClose => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `| default`, `| d`, `is [not] defined`, `is [not] undefined`.
fn feeds_default(rest: &[(Token, Span)]) -> bool {
    let words: Vec<Option<&str>> = rest
        .iter()
        .take(3)
        .map(|(t, _)| match t {
            Token::Ident(w) => Some(*w),
            Token::Pipe => Some("|"),
            _ => None,
        })
        .collect();
    matches!(
        words[..],
        [Some("|"), Some("default" | "d"), ..]
            | [Some("is"), Some("not"), Some("defined" | "undefined"), ..]
            | [Some("is"), Some("defined" | "undefined"), ..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(s: &str) -> Option<String> {
        rewrite(s, false, SyntaxConfig::default())
    }

    #[test]
    fn only_chains_into_default_or_a_definedness_test_are_rewritten() {
        assert_eq!(
            rewritten("{{ molecule_yml.driver.name | default('x') }}").unwrap(),
            format!("{{{{ {CHAIN}(molecule_yml, 'driver', 'name') | default('x') }}}}")
        );
        assert_eq!(
            rewritten("{% if a[k ~ 'x'][0].b is not defined %}y{% endif %}").unwrap(),
            format!("{{% if {CHAIN}(a, (k ~ 'x'), (0), 'b') is not defined %}}y{{% endif %}}")
        );
        assert_eq!(
            rewrite("x.y|d(1) and z", true, SyntaxConfig::default()).unwrap(),
            format!("{CHAIN}(x, 'y')|d(1) and z")
        );
        for untouched in [
            "{{ a.b }}",
            "{{ a | default(1) }}",
            "{{ a.b | lower | default(1) }}",
            "{{ f().b | default(1) }}",
            "{{ a.b() | default(1) }}",
            "{{ x in [1] | default([]) }}",
            "{{ a.b",
        ] {
            assert_eq!(rewritten(untouched), None, "{untouched}");
        }
    }
}
