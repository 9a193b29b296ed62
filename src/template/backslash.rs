//! Ansible's backslash rule for playbook values: a string constant inside
//! `{{ }}` keeps its backslashes. YAML has already read the escapes of a
//! double-quoted value once (`"\\1"` is `\1`), so Ansible stops Jinja from
//! reading them a second time (which would turn `\1` into the byte 0x01).
//! Template files, `{% %}` statements and bare conditions (`when:`) are not
//! YAML-escaped strings and keep Jinja's escapes.

use minijinja::machinery::{tokenize, Span, Token};
use minijinja::syntax::SyntaxConfig;

/// The source with each string constant of a `{{ }}` block (all of them
/// when `in_expr`, the source then being the inside of one) written so that
/// Jinja reads back its text verbatim; `None` when no constant holds a
/// backslash (or the source does not tokenize: compiling it reports why).
pub(super) fn keep_backslashes(
    source: &str,
    in_expr: bool,
    syntax: SyntaxConfig,
) -> Option<String> {
    if !source.contains('\\') {
        return None;
    }
    let tokens: Vec<(Token, Span)> = tokenize(source, in_expr, syntax)
        .collect::<Result<_, _>>()
        .ok()?;
    let mut out = String::new();
    let mut copied = 0;
    let mut in_variable = in_expr;
    for (token, span) in &tokens {
        match token {
            Token::VariableStart => in_variable = true,
            Token::VariableEnd => in_variable = false,
            Token::String(_) if in_variable => {
                let (start, end) = (span.start_offset as usize, span.end_offset as usize);
                out.push_str(&source[copied..start]);
                out.push_str(&verbatim(&source[start..end]));
                copied = end;
            }
            _ => {}
        }
    }
    (copied > 0).then(|| out + &source[copied..])
}

/// A quoted constant as written (`'a\1'`) re-escaped so that unescaping
/// gives back what is between its quotes (`'a\\1'`).
fn verbatim(quoted: &str) -> String {
    let quote = &quoted[..1];
    let inner = &quoted[1..quoted.len() - 1];
    let mut out = String::with_capacity(quoted.len() + 8);
    out.push_str(quote);
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push_str("\\\\");
            // The lexer ended the constant at an unescaped quote only, so
            // the character after a backslash stays part of it.
            if let Some(next) = chars.next() {
                if next.to_string() == quote || next == '\\' {
                    out.push('\\');
                }
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out.push_str(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(s: &str) -> Option<String> {
        keep_backslashes(s, false, SyntaxConfig::default())
    }

    #[test]
    fn constants_in_variable_blocks_keep_their_backslashes() {
        assert_eq!(
            kept(r"a\1 {{ v | regex_replace('(x)', '\1') }}").unwrap(),
            r"a\1 {{ v | regex_replace('(x)', '\\1') }}"
        );
        assert_eq!(
            kept(r#"{{ "it\"s \\ \n" }}"#).unwrap(),
            r#"{{ "it\\\"s \\\\ \\n" }}"#
        );
        assert_eq!(
            keep_backslashes(r"x | split('\t')", true, SyntaxConfig::default()).unwrap(),
            r"x | split('\\t')"
        );
        for untouched in [r"{% set x = '\n' %}", r"\1 {{ '1' }}", "{{ 'a' }}"] {
            assert_eq!(kept(untouched), None, "{untouched}");
        }
    }
}
