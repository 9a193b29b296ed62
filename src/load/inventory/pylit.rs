//! The subset of Python's `ast.literal_eval` that Ansible's INI inventory
//! parser relies on to type values: `22` is a number, `True` a boolean,
//! `'x'` a string, `[0, 1]` a list. Text that is no Python literal stays a
//! string, which the caller decides; here it is `None`.

use serde_json::{Map, Number, Value};

/// How deeply brackets may nest. Python's own parser stops at 200; deeper
/// text stays a string instead of overflowing the stack.
const MAX_DEPTH: usize = 100;

pub(super) fn parse(text: &str) -> Option<Value> {
    let mut p = Parser {
        text,
        pos: 0,
        depth: 0,
    };
    let first = p.value()?;
    p.skip_space();
    // `1, 2` is a tuple to Python, as in a parenthesised one.
    let value = if p.eat(',') {
        let mut items = vec![first];
        items.extend(p.items(None)?);
        Value::Array(items)
    } else {
        first
    };
    p.skip_space();
    // Python's tokenizer drops a trailing comment.
    (p.rest().is_empty() || p.rest().starts_with('#')).then_some(value)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    /// Brackets open around the value being parsed.
    depth: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_space(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        let hit = self.rest().starts_with(c);
        if hit {
            self.pos += c.len_utf8();
        }
        hit
    }

    fn value(&mut self) -> Option<Value> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        let value = self.value_here();
        self.depth -= 1;
        value
    }

    fn value_here(&mut self) -> Option<Value> {
        self.skip_space();
        let c = self.rest().chars().next()?;
        match c {
            '\'' | '"' => self.string().map(Value::String),
            '[' => {
                self.pos += 1;
                self.items(Some(']')).map(Value::Array)
            }
            '(' => self.tuple(),
            '{' => self.dict(),
            '-' | '+' | '.' | '0'..='9' => self.number(),
            _ => self.name(),
        }
    }

    /// Comma-separated values up to `close` (or the end), trailing comma allowed.
    fn items(&mut self, close: Option<char>) -> Option<Vec<Value>> {
        let mut items = Vec::new();
        loop {
            if close.is_some_and(|c| self.eat(c)) {
                return Some(items);
            }
            self.skip_space();
            if close.is_none() && (self.rest().is_empty() || self.rest().starts_with('#')) {
                return Some(items);
            }
            items.push(self.value()?);
            if !self.eat(',') {
                return match close {
                    Some(c) => self.eat(c).then_some(items),
                    None => Some(items),
                };
            }
        }
    }

    /// `(x)` is just `x`; `()`, `(x,)` and `(x, y)` are tuples.
    fn tuple(&mut self) -> Option<Value> {
        self.pos += 1;
        if self.eat(')') {
            return Some(Value::Array(Vec::new()));
        }
        let first = self.value()?;
        if self.eat(')') {
            return Some(first);
        }
        if !self.eat(',') {
            return None;
        }
        let mut items = vec![first];
        items.extend(self.items(Some(')'))?);
        Some(Value::Array(items))
    }

    fn dict(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            if self.eat('}') {
                return Some(Value::Object(map));
            }
            let key = match self.value()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            if !self.eat(':') {
                return None;
            }
            map.insert(key, self.value()?);
            if !self.eat(',') {
                return self.eat('}').then_some(Value::Object(map));
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let mut chars = self.rest().char_indices();
        let (_, quote) = chars.next()?;
        let mut out = String::new();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + c.len_utf8();
                    return Some(out);
                }
                '\\' => {
                    let (_, escaped) = chars.next()?;
                    match escaped {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        '\\' | '\'' | '"' => out.push(escaped),
                        // Python keeps unknown escapes as written.
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn number(&mut self) -> Option<Value> {
        let token: &str = self
            .rest()
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-')))
            .next()?;
        let sign_len = usize::from(token.starts_with(['-', '+']));
        // An exponent's sign belongs to the number; any other sign ends it.
        let end = token[sign_len..]
            .char_indices()
            .find(|&(i, c)| matches!(c, '+' | '-') && !token[sign_len..][..i].ends_with(['e', 'E']))
            .map_or(token.len(), |(i, _)| sign_len + i);
        let token = &token[..end];
        let value = number_value(token)?;
        self.pos += token.len();
        Some(value)
    }

    fn name(&mut self) -> Option<Value> {
        let word: &str = self
            .rest()
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()?;
        let value = match word {
            "True" => Value::Bool(true),
            "False" => Value::Bool(false),
            "None" => Value::Null,
            _ => return None,
        };
        self.pos += word.len();
        Some(value)
    }
}

fn number_value(token: &str) -> Option<Value> {
    let (negative, body) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token.strip_prefix('+').unwrap_or(token)),
    };
    if body.starts_with(['-', '+']) || body.is_empty() {
        return None;
    }
    let digits = body.replace('_', "");
    let radix = match digits.get(..2) {
        Some("0x" | "0X") => Some(16),
        Some("0o" | "0O") => Some(8),
        Some("0b" | "0B") => Some(2),
        _ => None,
    };
    let int = match radix {
        Some(radix) => i64::from_str_radix(&digits[2..], radix).ok()?,
        None if digits.bytes().all(|b| b.is_ascii_digit()) => {
            // Python 3 rejects `0644`; Ansible then keeps the text.
            if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|b| b != b'0') {
                return None;
            }
            digits.parse().ok()?
        }
        None => {
            let float: f64 = digits.parse().ok()?;
            let float = if negative { -float } else { float };
            return Number::from_f64(float).map(Value::Number);
        }
    };
    Some(Value::from(if negative { -int } else { int }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_type_like_python() {
        assert_eq!(parse("22"), Some(json!(22)));
        assert_eq!(parse("-3"), Some(json!(-3)));
        assert_eq!(parse("1_000"), Some(json!(1000)));
        assert_eq!(parse("0x1F"), Some(json!(31)));
        assert_eq!(parse("1.5"), Some(json!(1.5)));
        assert_eq!(parse("1e3"), Some(json!(1000.0)));
        assert_eq!(parse("True"), Some(json!(true)));
        assert_eq!(parse("False"), Some(json!(false)));
        assert_eq!(parse("None"), Some(json!(null)));
        assert_eq!(parse(r#""a \"b\"\n""#), Some(json!("a \"b\"\n")));
    }

    #[test]
    fn non_literals_are_left_to_the_caller() {
        for text in [
            "deploy", "true", "0644", "1.2.3", "10.0.0.1", "a b", "'open", "1-2", "-",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
    }

    #[test]
    fn containers_and_comments() {
        assert_eq!(parse("[0, 1, 'x']"), Some(json!([0, 1, "x"])));
        assert_eq!(parse("(1,)"), Some(json!([1])));
        assert_eq!(parse("(1)"), Some(json!(1)));
        assert_eq!(parse("1, 2"), Some(json!([1, 2])));
        assert_eq!(
            parse("{'a': [1], 2: None}"),
            Some(json!({"a": [1], "2": null}))
        );
        assert_eq!(parse("42  # the answer"), Some(json!(42)));
        assert_eq!(parse("[1, 2"), None);
    }

    #[test]
    fn deep_nesting_stays_a_string_instead_of_overflowing_the_stack() {
        assert_eq!(parse(&"[".repeat(100_000)), None);
        assert_eq!(
            parse(&format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000))),
            None
        );
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok).is_some());
    }
}
