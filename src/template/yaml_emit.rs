//! YAML text as PyYAML's `yaml.dump` writes it, which is what Ansible's
//! `to_yaml` and `to_nice_yaml` give: keys sorted, sequences in a mapping
//! not indented, collections of scalars in flow style unless block style
//! is asked for, and each string in the first of plain, single-quoted or
//! double-quoted style that reads back as the same string. PyYAML's folding
//! of lines longer than 80 columns is not done: such a line reads back the
//! same, but is laid out differently.

use std::sync::LazyLock;

use serde_json::Value as Json;

/// `yaml.dump` keywords Ansible's filters pass on.
pub(super) struct Style {
    pub indent: usize,
    /// `default_flow_style=None`: a collection holding only scalars is
    /// written in flow style (`[a, b]`); `False`: block style throughout.
    pub flow_leaves: bool,
    pub sort_keys: bool,
}

/// Emits `v` as a YAML document ending in a newline.
pub(super) fn emit(v: &Json, style: &Style) -> String {
    let mut out = String::new();
    if is_block(v, style) {
        block(&mut out, v, 0, style);
        return out;
    }
    let text = match v {
        Json::Array(_) | Json::Object(_) => flow(v, style),
        scalar => scalar_text(scalar, Context::Block, style.indent),
    };
    // PyYAML would end a plain root scalar with `...`; Ansible's dumper
    // does not.
    out.push_str(&text);
    out.push('\n');
    out
}

fn is_collection(v: &Json) -> bool {
    matches!(v, Json::Array(_) | Json::Object(_))
}

/// A collection written over lines of its own: not empty, and (with flow
/// leaves) holding at least one collection.
fn is_block(v: &Json, style: &Style) -> bool {
    let mut items: Box<dyn Iterator<Item = &Json>> = match v {
        Json::Array(a) if !a.is_empty() => Box::new(a.iter()),
        Json::Object(m) if !m.is_empty() => Box::new(m.values()),
        _ => return false,
    };
    !style.flow_leaves || items.any(is_collection)
}

fn entries<'v>(m: &'v serde_json::Map<String, Json>, style: &Style) -> Vec<(&'v String, &'v Json)> {
    let mut entries: Vec<_> = m.iter().collect();
    if style.sort_keys {
        entries.sort_by(|a, b| a.0.cmp(b.0));
    }
    entries
}

/// Writes the block collection `v` with its lines starting at `column`.
fn block(out: &mut String, v: &Json, column: usize, style: &Style) {
    match v {
        Json::Object(m) => {
            for (key, value) in entries(m, style) {
                pad(out, column);
                out.push_str(&string(key, Context::Key, column + style.indent));
                out.push(':');
                match value {
                    // A sequence in a mapping is not indented.
                    Json::Array(_) if is_block(value, style) => {
                        out.push('\n');
                        block(out, value, column, style);
                    }
                    _ if is_block(value, style) => {
                        out.push('\n');
                        block(out, value, column + style.indent, style);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&inline(value, column + style.indent, style));
                        out.push('\n');
                    }
                }
            }
        }
        Json::Array(items) => {
            for item in items {
                pad(out, column);
                out.push('-');
                if is_block(item, style) {
                    // The nested collection starts on the dash's line, its
                    // first line padded to where the others start.
                    let inner = column + style.indent;
                    let mut nested = String::new();
                    block(&mut nested, item, inner, style);
                    pad(out, style.indent - 1);
                    out.push_str(&nested[inner..]);
                } else {
                    out.push(' ');
                    out.push_str(&inline(item, column + style.indent, style));
                    out.push('\n');
                }
            }
        }
        _ => unreachable!("only collections are written as blocks"),
    }
}

/// A scalar or flow collection after `key:` or `-`.
fn inline(v: &Json, indent: usize, style: &Style) -> String {
    match v {
        Json::Array(_) | Json::Object(_) => flow(v, style),
        scalar => scalar_text(scalar, Context::Block, indent),
    }
}

fn flow(v: &Json, style: &Style) -> String {
    match v {
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(|i| flow(i, style)).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(m) => {
            let items: Vec<String> = entries(m, style)
                .into_iter()
                .map(|(k, v)| format!("{}: {}", string(k, Context::FlowKey, 0), flow(v, style)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        scalar => scalar_text(scalar, Context::Flow, 0),
    }
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

#[derive(Clone, Copy, PartialEq)]
enum Context {
    Block,
    Flow,
    Key,
    FlowKey,
}

fn scalar_text(v: &Json, context: Context, indent: usize) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) if n.is_f64() => float(n.as_f64().unwrap_or_default()),
        Json::Number(n) => n.to_string(),
        Json::String(s) => string(s, context, indent),
        _ => unreachable!("collections are written by block or flow"),
    }
}

/// PyYAML's float: `repr`, lower case, with `.0` before an exponent.
fn float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let repr = crate::base::python::float_repr(f);
    match !repr.contains('.') && repr.contains('e') {
        true => repr.replacen('e', ".0e", 1),
        false => repr,
    }
}

/// PyYAML's `analyze_scalar` and `choose_scalar_style`.
fn string(s: &str, context: Context, indent: usize) -> String {
    let a = Analysis::of(s);
    let flow = matches!(context, Context::Flow | Context::FlowKey);
    let key = matches!(context, Context::Key | Context::FlowKey);
    let plain = match flow {
        true => a.flow_plain,
        false => a.block_plain,
    };
    if plain && !s.is_empty() && !(key && a.line_breaks) && resolves_to_str(s) {
        return s.to_string();
    }
    if a.single_quoted && !(key && a.line_breaks) {
        return single_quoted(s, indent);
    }
    double_quoted(s)
}

#[derive(Default)]
struct Analysis {
    flow_plain: bool,
    block_plain: bool,
    single_quoted: bool,
    line_breaks: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_space_or_break(c: Option<char>) -> bool {
    c.is_none_or(|c| matches!(c, '\0' | ' ' | '\t' | '\r') || is_break(c))
}

/// Printable as PyYAML with `allow_unicode` reads it.
fn printable(c: char) -> bool {
    matches!(c, '\n' | '\x20'..='\x7e')
        || (matches!(c, '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
            && c != '\u{feff}')
}

impl Analysis {
    fn of(s: &str) -> Analysis {
        if s.is_empty() {
            return Analysis {
                single_quoted: true,
                ..Analysis::default()
            };
        }
        let chars: Vec<char> = s.chars().collect();
        let (mut flow_ind, mut block_ind) = (false, false);
        if s.starts_with("---") || s.starts_with("...") {
            (flow_ind, block_ind) = (true, true);
        }
        let (mut leading_space, mut leading_break) = (false, false);
        let (mut trailing_space, mut trailing_break) = (false, false);
        let (mut break_space, mut space_break) = (false, false);
        let (mut special, mut line_breaks) = (false, false);
        let (mut previous_space, mut previous_break) = (false, false);
        let mut preceded_by_whitespace = true;
        for (i, &c) in chars.iter().enumerate() {
            let followed_by_whitespace = is_space_or_break(chars.get(i + 1).copied());
            if i == 0 {
                if "#,[]{}&*!|>'\"%@`".contains(c) {
                    (flow_ind, block_ind) = (true, true);
                }
                if c == '?' || c == ':' {
                    flow_ind = true;
                    block_ind |= followed_by_whitespace;
                }
                if c == '-' && followed_by_whitespace {
                    (flow_ind, block_ind) = (true, true);
                }
            } else {
                if ",?[]{}".contains(c) {
                    flow_ind = true;
                }
                if c == ':' {
                    flow_ind = true;
                    block_ind |= followed_by_whitespace;
                }
                if c == '#' && preceded_by_whitespace {
                    (flow_ind, block_ind) = (true, true);
                }
            }
            line_breaks |= is_break(c);
            special |= !printable(c);
            if c == ' ' {
                leading_space |= i == 0;
                trailing_space |= i == chars.len() - 1;
                break_space |= previous_break;
                (previous_space, previous_break) = (true, false);
            } else if is_break(c) {
                leading_break |= i == 0;
                trailing_break |= i == chars.len() - 1;
                space_break |= previous_space;
                (previous_space, previous_break) = (false, true);
            } else {
                (previous_space, previous_break) = (false, false);
            }
            preceded_by_whitespace = is_space_or_break(Some(c));
        }
        let edges = leading_space || leading_break || trailing_space || trailing_break;
        let no_plain = edges || break_space || space_break || special || line_breaks;
        Analysis {
            flow_plain: !no_plain && !flow_ind,
            block_plain: !no_plain && !block_ind,
            single_quoted: !(break_space || space_break || special),
            line_breaks,
        }
    }
}

/// Whether PyYAML's resolver reads the plain text back as a string, not
/// as a YAML 1.1 bool, int, float, null, timestamp, merge or value.
fn resolves_to_str(s: &str) -> bool {
    static IMPLICIT: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(concat!(
            r"^(?:",
            r"yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF",
            r"|[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?",
            r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
            r"|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+",
            r"|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+",
            r"|<<|~|null|Null|NULL|=",
            r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]",
            r"|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
            r")$"
        ))
        .expect("the resolver's patterns are valid")
    });
    !IMPLICIT.is_match(s)
}

/// PyYAML's `write_single_quoted`: `'` doubled, and each run of line
/// breaks written with one more, the next line indented.
fn single_quoted(s: &str, indent: usize) -> String {
    let mut out = String::from("'");
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if is_break(c) {
            let mut run = vec![c];
            while let Some(&next) = chars.peek().filter(|n| is_break(**n)) {
                run.push(next);
                chars.next();
            }
            if run[0] == '\n' {
                out.push('\n');
            }
            for br in run {
                out.push(if br == '\n' { '\n' } else { br });
            }
            pad(&mut out, indent);
        } else if c == '\'' {
            out.push_str("''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// PyYAML's `write_double_quoted` with `allow_unicode`.
fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        let escape = match c {
            '\0' => "0",
            '\x07' => "a",
            '\x08' => "b",
            '\t' => "t",
            '\n' => "n",
            '\x0b' => "v",
            '\x0c' => "f",
            '\r' => "r",
            '\x1b' => "e",
            '"' => "\"",
            '\\' => "\\",
            '\u{85}' => "N",
            '\u{a0}' => "_",
            '\u{2028}' => "L",
            '\u{2029}' => "P",
            c if printable(c) && c != '\n' => {
                out.push(c);
                continue;
            }
            c if (c as u32) <= 0xff => {
                out.push_str(&format!("\\x{:02X}", c as u32));
                continue;
            }
            c if (c as u32) <= 0xffff => {
                out.push_str(&format!("\\u{:04X}", c as u32));
                continue;
            }
            c => {
                out.push_str(&format!("\\U{:08X}", c as u32));
                continue;
            }
        };
        out.push('\\');
        out.push_str(escape);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected texts are PyYAML 6's `yaml.dump(v, allow_unicode=True, ...)`
    /// with Ansible's dumper (no `...` after a root scalar).
    #[test]
    fn writes_as_pyyaml_dumps() {
        let v: Json = serde_json::from_str(
            r##"{"a": [{"x": 1, "y": [1, {"z": 2}]}], "b": "a\nb", "c": "x\ty", "d": "", "e": "yes", "f": "y", "g": "1:30", "h": "- x", "i": "a: b", "j": "a #b", "k": 1e16, "l": [], "m": {}, "n": "ü", "o": " lead", "p": "2001-12-14", "q": "~", "r": "#x", "s": "a,b", "t": "[x]", "u": "a\n", "v": "0o17", "w": "0x1F", "x": "1_000", "y": "+1", "z": ".5", "za": "1e5", "zb": "<<", "zc": "="}"##,
        )
        .unwrap();
        let leaves = Style {
            indent: 2,
            flow_leaves: true,
            sort_keys: true,
        };
        assert_eq!(
            emit(&v, &leaves),
            "a:\n- x: 1\n  y:\n  - 1\n  - {z: 2}\nb: 'a\n\n  b'\nc: \"x\\ty\"\nd: ''\ne: 'yes'\nf: y\ng: '1:30'\nh: '- x'\ni: 'a: b'\nj: 'a #b'\nk: 1.0e+16\nl: []\nm: {}\nn: ü\no: ' lead'\np: '2001-12-14'\nq: '~'\nr: '#x'\ns: a,b\nt: '[x]'\nu: 'a\n\n  '\nv: 0o17\nw: '0x1F'\nx: '1_000'\ny: '+1'\nz: '.5'\nza: 1e5\nzb: '<<'\nzc: '='\n"
        );
        let nice = Style {
            indent: 4,
            flow_leaves: false,
            sort_keys: true,
        };
        let text = emit(&v, &nice);
        assert!(
            text.starts_with("a:\n-   x: 1\n    y:\n    - 1\n    -   z: 2\nb: 'a\n\n    b'\n"),
            "{text}"
        );
        assert_eq!(emit(&Json::from("abc"), &nice), "abc\n");
        assert_eq!(emit(&Json::from("yes"), &nice), "'yes'\n");
        assert_eq!(emit(&serde_json::json!([1, "a"]), &leaves), "[1, a]\n");
        assert_eq!(emit(&Json::from(1.0), &nice), "1.0\n");
        assert_eq!(emit(&Json::Null, &nice), "null\n");
    }
}
