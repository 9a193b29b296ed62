//! Ansible's `key=value` argument strings (`copy: src=a dest="b c"`), read
//! as its `parse_kv` reads them: words split on spaces but kept whole
//! inside quotes and Jinja blocks, a line ending in a lone `\` joined to
//! the next, Python's escapes decoded (`\n`, `\t`, `\b`, `\x41`, `\u00e9`),
//! one pair of quotes around a value taken off, and `\=` a literal `=`.
//! Words with no `=` are the free-form part, `_raw_params`.

/// The parameters of a `key=value` string, and its free-form words joined
/// as Ansible joins them (`None` when there are none).
#[derive(Debug)]
pub(crate) struct KeyValues {
    pub pairs: Vec<(String, String)>,
    pub raw: Option<String>,
}

/// The options a command line may carry as `key=value` words
/// (`command: make chdir=/src`); any other word is part of the command.
const COMMAND_OPTIONS: &[&str] = &[
    "creates",
    "removes",
    "chdir",
    "executable",
    "warn",
    "stdin",
    "stdin_add_newline",
    "strip_empty_ends",
];

/// `parse_kv(text)`; `Err` is Ansible's reason when it cannot split.
pub(crate) fn parse(text: &str) -> Result<KeyValues, String> {
    parse_kv(text, false)
}

/// `parse_kv(text, check_raw=True)`, as Ansible reads a command line
/// (`command`, `shell`, `script`, `raw`): only its options are taken out,
/// and every other word stays in the command as written.
pub(crate) fn parse_command(text: &str) -> Result<KeyValues, String> {
    parse_kv(text, true)
}

fn parse_kv(text: &str, check_raw: bool) -> Result<KeyValues, String> {
    let mut pairs = Vec::new();
    let mut raw = Vec::new();
    for word in split_args(text)? {
        let decoded = decode_escapes(&word);
        if !decoded.contains('=') {
            raw.push(word);
            continue;
        }
        let unescaped_eq = decoded
            .char_indices()
            .skip(1)
            .find(|&(i, c)| c == '=' && !decoded[..i].ends_with('\\'))
            .map(|(i, _)| i);
        match unescaped_eq {
            Some(at) if check_raw && !COMMAND_OPTIONS.contains(&&decoded[..at]) => raw.push(word),
            Some(at) => pairs.push((
                decoded[..at].trim().to_string(),
                unquote(decoded[at + 1..].trim()).to_string(),
            )),
            None => raw.push(decoded.replace("\\=", "=")),
        }
    }
    let raw = (!raw.is_empty()).then(|| join_args(&raw));
    Ok(KeyValues { pairs, raw })
}

/// Ansible's `split_args`: spaces split words except inside quotes or a
/// `{{ }}`, `{% %}` or `{# #}` block; line breaks are kept in the word
/// they end, but for a line whose last word is a lone `\`.
pub(crate) fn split_args(text: &str) -> Result<Vec<String>, String> {
    let mut params: Vec<String> = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut quote: Option<char> = None;
    let (mut print, mut block, mut comment) = (0usize, 0usize, 0usize);
    for (line_no, line) in lines.iter().enumerate() {
        let mut continued = false;
        for (idx, token) in line.split(' ').enumerate() {
            if token.is_empty() && idx != 0 {
                match params.last_mut() {
                    Some(last) => last.push(' '),
                    None => params.push(" ".into()),
                }
                continue;
            }
            let inside_before = quote.is_some();
            if token == "\\" && !inside_before {
                continued = true;
                continue;
            }
            quote = quote_state(token, quote);
            let inside = quote.is_some();
            let in_block = print > 0 || block > 0 || comment > 0;
            let mut appended = false;
            if inside && !inside_before && !in_block {
                params.push(token.to_string());
                appended = true;
            } else if in_block || inside || inside_before {
                let last = params.last_mut().ok_or_else(|| unbalanced(text))?;
                if idx > 0 {
                    last.push(' ');
                }
                last.push_str(token);
                appended = true;
            }
            for (depth, open, close) in [
                (&mut print, "{{", "}}"),
                (&mut block, "{%", "%}"),
                (&mut comment, "{#", "#}"),
            ] {
                let before = *depth;
                *depth = jinja_depth(token, *depth, open, close);
                if *depth != before && !appended {
                    params.push(token.to_string());
                    appended = true;
                }
            }
            let in_block = print > 0 || block > 0 || comment > 0;
            if !in_block && !inside && !appended && !token.is_empty() {
                params.push(token.to_string());
            }
        }
        if lines.len() > 1 && line_no != lines.len() - 1 && !continued {
            match params.last_mut() {
                Some(last) => last.push('\n'),
                None => params.push("\n".into()),
            }
        }
    }
    if print > 0 || block > 0 || comment > 0 || quote.is_some() {
        return Err(unbalanced(text));
    }
    Ok(params)
}

fn unbalanced(text: &str) -> String {
    format!("failed at splitting arguments, either an unbalanced jinja2 block or quotes: {text}")
}

/// The quote a word leaves open, given the one open before it; a quote
/// after a backslash counts for nothing.
fn quote_state(token: &str, mut quote: Option<char>) -> Option<char> {
    let mut prev = None;
    for c in token.chars() {
        if (c == '"' || c == '\'') && prev != Some('\\') {
            quote = match quote {
                Some(q) if q == c => None,
                Some(q) => Some(q),
                None => Some(c),
            };
        }
        prev = Some(c);
    }
    quote
}

fn jinja_depth(token: &str, depth: usize, open: &str, close: &str) -> usize {
    let opened = token.matches(open).count();
    let closed = token.matches(close).count();
    (depth + opened).saturating_sub(closed)
}

/// Python's escapes as `codecs.decode(..., 'unicode-escape')` reads the
/// ones Ansible's `_ESCAPE_SEQUENCE_RE` picks out (but `\N{name}`, which
/// stays as written); anything else stays.
fn decode_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let hex = |n: usize| {
            let digits = after.get(1..1 + n)?;
            let ok = digits.len() == n && digits.chars().all(|c| c.is_ascii_hexdigit());
            ok.then(|| u32::from_str_radix(digits, 16).ok())
                .flatten()
                .and_then(char::from_u32)
        };
        let simple = |c: char| match c {
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            _ => None,
        };
        let first = after.chars().next();
        let (decoded, used) = match first {
            Some('U') => (hex(8), 9),
            Some('u') => (hex(4), 5),
            Some('x') => (hex(2), 3),
            Some(c) => (simple(c), c.len_utf8()),
            None => (None, 0),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// One pair of matching quotes around the whole value taken off, unless
/// the closing one is escaped.
fn unquote(s: &str) -> &str {
    let quoted = s.len() >= 2
        && (s.starts_with('"') || s.starts_with('\''))
        && s.ends_with(&s[..1])
        && !s[..s.len() - 1].ends_with('\\');
    match quoted {
        true => &s[1..s.len() - 1],
        false => s,
    }
}

/// Free-form words as one text: a space between two, none after a line
/// break.
fn join_args(words: &[String]) -> String {
    let mut out = String::new();
    for word in words {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse(text).unwrap().pairs
    }

    #[test]
    fn values_keep_quoted_spaces_and_templates_whole() {
        assert_eq!(
            pairs(r#"src=a dest="b c" mode='0644' msg={{ x | default('y z') }}"#),
            [
                ("src".into(), "a".into()),
                ("dest".into(), "b c".into()),
                ("mode".into(), "0644".into()),
                ("msg".into(), "{{ x | default('y z') }}".into()),
            ]
        );
    }

    #[test]
    fn escapes_are_decoded_as_python_decodes_them() {
        let p = pairs(r"regexp='\b(.+)\b' line=a\tb eq=x\=y u=\u00e9 keep=\d");
        assert_eq!(p[0].1, "\x08(.+)\x08", "\\b is a backspace, as in Ansible");
        assert_eq!(p[1].1, "a\tb");
        assert_eq!(p[2], ("eq".into(), "x\\=y".into()));
        assert_eq!(p[3].1, "é");
        assert_eq!(p[4].1, "\\d", "no Python escape: kept");
    }

    #[test]
    fn words_without_a_key_are_the_free_form_part() {
        let kv = parse("namenewdynamichost groupsnewdynamicgroup a=1").unwrap();
        assert_eq!(kv.pairs, [("a".into(), "1".into())]);
        assert_eq!(
            kv.raw.as_deref(),
            Some("namenewdynamichost groupsnewdynamicgroup")
        );
    }

    #[test]
    fn a_lone_backslash_joins_lines_and_quotes_keep_line_breaks() {
        let kv = parse("echo a \\\n\"b\nc\" d").unwrap();
        assert_eq!(kv.raw.as_deref(), Some("echo a \"b\nc\" d"));
    }

    #[test]
    fn a_command_line_gives_up_its_options_only() {
        let kv = parse_command("tar xzf a.tgz --x=y creates=/opt/a chdir='/tmp/b c'").unwrap();
        assert_eq!(kv.raw.as_deref(), Some("tar xzf a.tgz --x=y"));
        assert_eq!(
            kv.pairs,
            [
                ("creates".into(), "/opt/a".into()),
                ("chdir".into(), "/tmp/b c".into())
            ]
        );
        let kv = parse_command("printf '%s\\n' a=\\t").unwrap();
        assert_eq!(
            kv.raw.as_deref(),
            Some("printf '%s\\n' a=\\t"),
            "as written"
        );
    }

    #[test]
    fn an_open_quote_or_block_is_refused() {
        for text in ["a='b", "a={{ b", "a={% if x"] {
            assert!(parse(text).unwrap_err().contains("unbalanced"), "{text}");
        }
    }
}
