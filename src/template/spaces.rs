//! Python's Jinja reads any Unicode whitespace between the tokens of a
//! `{{ }}` or `{% %}` block (its lexer's `\s` is Unicode), minijinja only
//! ASCII; a no-break space typed after `{{` is real content (an editor
//! puts one there), so such spaces become plain ones before compiling.
//! Spaces inside string constants, and everything outside blocks, stay.

use std::borrow::Cow;

/// `in_block`: the text is the inside of one block (an expression).
pub(super) fn ascii_spaced(text: &str, in_block: bool) -> Cow<'_, str> {
    let odd = |c: char| c.is_whitespace() && !c.is_ascii();
    if !text.chars().any(odd) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut block = in_block;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match (block, quote) {
            (false, _) if !in_block && c == '{' && matches!(next, Some('{' | '%')) => block = true,
            (true, None) if !in_block && matches!(c, '}' | '%') && next == Some('}') => {
                block = false
            }
            (true, None) if c == '\'' || c == '"' => quote = Some(c),
            (true, Some(q)) if c == q => quote = None,
            (true, Some(_)) if c == '\\' => {
                out.push(c);
                if let Some(escaped) = chars.next() {
                    out.push(escaped);
                }
                continue;
            }
            _ => {}
        }
        out.push(if block && quote.is_none() && odd(c) {
            ' '
        } else {
            c
        });
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::ascii_spaced;

    #[test]
    fn no_break_spaces_in_blocks_become_spaces_and_stay_elsewhere() {
        let text = "a\u{a0}{{\u{a0}x ~ '\u{a0}' }} b\u{a0}{%\u{2003}if y %}";
        assert_eq!(
            ascii_spaced(text, false),
            "a\u{a0}{{ x ~ '\u{a0}' }} b\u{a0}{% if y %}"
        );
        assert_eq!(ascii_spaced("x\u{a0}| int", true), "x | int");
        assert!(matches!(
            ascii_spaced("{{ x }}", false),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
