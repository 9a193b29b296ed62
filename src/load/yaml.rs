//! The one YAML loader: every node keeps the file:line:column it came from.
//!
//! Built on `yaml-rust2`'s event parser because serde-based loaders
//! (`serde_yaml`, archived upstream, and its forks) only report positions for
//! syntax errors, while nodeprov needs a position for every task and parameter.
//! Plain scalars resolve as YAML 1.1 does (`yes`/`no`/`on`/`off` are booleans),
//! matching what Ansible users expect from PyYAML.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::base::diag::{Diagnostic, Source, Span};
use crate::base::input::ReadError;
use crate::load::vault;

/// Nodes that aliases may add to one document. Each alias copies its
/// anchor's whole subtree, so nine aliases of nine aliases of ... (a
/// "billion laughs") would otherwise grow exponentially from a few lines.
pub const MAX_ALIAS_NODES: usize = 100_000;
/// Nodes one document may hold, aliases included. A node takes about 60
/// bytes while the document loads and some 250 once a playbook holds it as
/// variables: these 3,000,000 (a vars file mapping 1,000,000 names is
/// 2,000,001) cost some 200 MB to refuse and 750 MB to hold, where a
/// 64 MiB file of `1,` would otherwise need gigabytes.
pub const MAX_NODES: usize = 3_000_000;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub span: Span,
}

impl Node {
    pub fn new(value: Value, span: Span) -> Self {
        Node { value, span }
    }

    /// What the node is, in the words an error message uses.
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// Looks up a mapping entry by string key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// A scalar as text (numbers and booleans spelled as YAML would).
    pub fn scalar_text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Null => Some(String::new()),
            _ => None,
        }
    }

    /// An error pointing at this node.
    pub fn error(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(&self.span, message)
    }

    /// The node as plain data, for variables and templating.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.scalar_text().unwrap_or_default(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Loads the one document of `text`; an empty document is `Null`, and a
/// second document is an error rather than silently dropped (as PyYAML's
/// `safe_load` does for Ansible). A vault-encrypted text is decrypted
/// first, and each of its values is masked in reports from then on.
pub fn load_str(text: &str, name: &str) -> Result<Node, Diagnostic> {
    if !vault::is_vault(text) {
        return parse(text, name, text);
    }
    // Errors in the plaintext name their line but never quote it.
    let unquoted = Span::new(source(name, ""), 1, 1);
    let plain = vault::open(text, &unquoted)?;
    let doc = parse(&plain, name, "")?;
    reveal_values(&doc);
    Ok(doc)
}

fn source(name: &str, quoted: &str) -> Arc<Source> {
    Arc::new(Source {
        name: name.to_string(),
        text: quoted.to_string(),
    })
}

/// Parses `text`; errors quote the lines of `quoted`.
fn parse(text: &str, name: &str, quoted: &str) -> Result<Node, Diagnostic> {
    let source = source(name, quoted);
    let mut text = std::borrow::Cow::Borrowed(text);
    loop {
        match parse_events(&text, &source) {
            Ok(node) => return Ok(node),
            Err(Stop::Invalid(diag)) => return Err(diag),
            Err(Stop::Scan(e)) => match reindent_quoted(&text, &e) {
                Some(fixed) => text = fixed.into(),
                None => return Err(syntax_error(&source, &e)),
            },
        }
    }
}

enum Stop {
    Scan(yaml_rust2::ScanError),
    Invalid(Diagnostic),
}

fn parse_events(text: &str, source: &Arc<Source>) -> Result<Node, Stop> {
    let mut builder = Builder {
        source: source.clone(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        alias_nodes: 0,
        nodes: 0,
        root: None,
        error: None,
    };
    // Events are pulled one by one, so that parsing stops at the first
    // error instead of scanning the rest of a file that may be huge.
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token().map_err(Stop::Scan)?;
        // Past the first document only to find a second one, which is an error.
        let done = matches!(event, Event::StreamEnd);
        builder.on_event(event, mark);
        if let Some(err) = builder.error {
            return Err(Stop::Invalid(err));
        }
        if done {
            break;
        }
    }
    Ok(builder
        .root
        .unwrap_or_else(|| Node::new(Value::Null, Span::new(source.clone(), 1, 1))))
}

/// Every value of a decrypted document is a secret, numbers and booleans
/// too; its keys are names.
fn reveal_values(node: &Node) {
    match &node.value {
        Value::Str(s) => vault::reveal(s),
        Value::Int(i) => vault::reveal_scalar(&[i.to_string()]),
        Value::Float(f) => vault::reveal_scalar(&[f.to_string(), format!("{f:?}")]),
        Value::Bool(b) => {
            let word = b.to_string();
            let python = format!("{}{}", word[..1].to_uppercase(), &word[1..]);
            vault::reveal_scalar(&[word, python]);
        }
        Value::Seq(items) => items.iter().for_each(reveal_values),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| reveal_values(v)),
        _ => {}
    }
}

/// Reads and loads a YAML file; read failures become a diagnostic on the path.
pub fn load_file(path: &Path) -> Result<Node, Diagnostic> {
    let text = crate::base::input::read_text(path).map_err(ReadError::into_diagnostic)?;
    load_str(&text, &path.display().to_string())
}

/// PyYAML, which Ansible loads playbooks with, accepts a quoted scalar
/// whose continuation lines start left of the block's indentation, where
/// the YAML spec and yaml-rust2 do not. A continuation line's leading
/// blanks are folded away, so indenting every continuation line of that
/// scalar past its opening quote keeps the value PyYAML reads, and moves
/// no other line. `None` for any other error.
fn reindent_quoted(text: &str, e: &yaml_rust2::ScanError) -> Option<String> {
    if e.info() != "invalid indentation in quoted scalar" {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let open = e.marker().index();
    let quote = *chars.get(open).filter(|c| matches!(c, '"' | '\''))?;
    let indent = " ".repeat(e.marker().col() + 1);
    let mut fixed: String = chars[..=open].iter().collect();
    let mut i = open + 1;
    while i < chars.len() {
        let c = chars[i];
        fixed.push(c);
        i += 1;
        match c {
            '\\' if quote == '"' => {
                fixed.extend(chars.get(i));
                i += 1;
            }
            '\'' if quote == '\'' && chars.get(i) == Some(&'\'') => {
                fixed.push('\'');
                i += 1;
            }
            '\n' if !matches!(chars.get(i), Some('\n' | '\r') | None) => fixed.push_str(&indent),
            c if c == quote => {
                fixed.extend(&chars[i..]);
                return Some(fixed);
            }
            _ => {}
        }
    }
    None
}

fn syntax_error(source: &Arc<Source>, e: &yaml_rust2::ScanError) -> Diagnostic {
    let at = span_at(source, e.marker());
    if !e.info().contains("found a tab") {
        return Diagnostic::new(&at, format!("invalid YAML: {}", e.info()));
    }
    // The scanner names where the scalar began; the tab is what to fix.
    let tab = first_tab_from(source, at.line, at.col).unwrap_or(at);
    Diagnostic::new(&tab, format!("invalid YAML: {}", e.info()))
        .with_hint("YAML indents with spaces; tabs are not allowed there")
}

/// The first tab at or after `line`:`col`.
fn first_tab_from(source: &Arc<Source>, line: usize, col: usize) -> Option<Span> {
    source
        .text
        .lines()
        .enumerate()
        .skip(line - 1)
        .find_map(|(i, text)| {
            let skip = if i + 1 == line { col - 1 } else { 0 };
            let pos = text.chars().skip(skip).position(|c| c == '\t')?;
            Some(Span::new(source.clone(), i + 1, skip + pos + 1))
        })
}

fn span_at(source: &Arc<Source>, mark: &Marker) -> Span {
    Span::new(source.clone(), mark.line().max(1), mark.col() + 1)
}

enum Frame {
    Seq(Vec<Node>, Span, usize),
    Map(MapFrame),
}

struct MapFrame {
    entries: Vec<(Node, Node)>,
    /// Where each scalar key sits in `entries`, so that finding a duplicate
    /// costs the same for the 40,000th key as for the first.
    index: HashMap<KeyId, usize>,
    pending_key: Option<Node>,
    merges: Vec<Node>,
    span: Span,
    anchor: usize,
}

/// The identity of a scalar key. Collection keys have none: two of them
/// never compare equal, as each carries its own position.
#[derive(Hash, PartialEq, Eq)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
}

impl KeyId {
    fn of(value: &Value) -> Option<KeyId> {
        Some(match value {
            Value::Null => KeyId::Null,
            Value::Bool(b) => KeyId::Bool(*b),
            Value::Int(i) => KeyId::Int(*i),
            // NaN equals nothing; adding 0.0 makes -0.0 the same key as 0.0.
            Value::Float(f) if f.is_nan() => return None,
            Value::Float(f) => KeyId::Float((f + 0.0).to_bits()),
            Value::Str(s) => KeyId::Str(s.clone()),
            Value::Seq(_) | Value::Map(_) => return None,
        })
    }
}

impl MapFrame {
    fn new(span: Span, anchor: usize) -> Self {
        MapFrame {
            entries: Vec::new(),
            index: HashMap::new(),
            pending_key: None,
            merges: Vec::new(),
            span,
            anchor,
        }
    }

    /// The entry already holding `key`, if any.
    fn existing(&self, key: &Node) -> Option<&Node> {
        let i = *self.index.get(&KeyId::of(&key.value)?)?;
        Some(&self.entries[i].0)
    }

    fn push(&mut self, key: Node, value: Node) {
        if let Some(id) = KeyId::of(&key.value) {
            self.index.insert(id, self.entries.len());
        }
        self.entries.push((key, value));
    }

    /// Adds an entry; a repeated key is an error (PyYAML silently keeps the
    /// last one, which hides typos in playbooks).
    fn insert(&mut self, key: Node, value: Node) -> Result<(), Diagnostic> {
        if let Some(first) = self.existing(&key) {
            let name = key.scalar_text().unwrap_or_default();
            return Err(key
                .error(format!(
                    "duplicate key '{}'",
                    crate::base::diag::clip(&name)
                ))
                .with_hint(format!("first defined at {}", first.span.location())));
        }
        self.push(key, value);
        Ok(())
    }

    /// Merge keys (`<<`) only fill in what the mapping does not set itself.
    fn finish(mut self) -> (Node, usize) {
        for merged in std::mem::take(&mut self.merges) {
            let maps: Vec<&Node> = match &merged.value {
                Value::Seq(items) => items.iter().collect(),
                _ => vec![&merged],
            };
            for (k, v) in maps.into_iter().filter_map(Node::as_map).flatten() {
                if self.existing(k).is_none() {
                    self.push(k.clone(), v.clone());
                }
            }
        }
        // A block mapping's start event is reported after its first key was
        // scanned; the first key is where a reader sees the mapping begin.
        let span = match self.entries.first() {
            Some((k, _)) if (k.span.line, k.span.col) < (self.span.line, self.span.col) => {
                k.span.clone()
            }
            _ => self.span,
        };
        (Node::new(Value::Map(self.entries), span), self.anchor)
    }
}

struct Builder {
    source: Arc<Source>,
    stack: Vec<Frame>,
    /// Anchored nodes with the number of nodes in each.
    anchors: HashMap<usize, (Node, usize)>,
    /// Nodes added by alias expansion so far, against [`MAX_ALIAS_NODES`].
    alias_nodes: usize,
    /// Nodes in the document so far, against [`MAX_NODES`].
    nodes: usize,
    root: Option<Node>,
    error: Option<Diagnostic>,
}

impl Builder {
    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            let size = node_count(&node);
            self.anchors.insert(anchor, (node.clone(), size));
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq(items, _, _)) => items.push(node),
            Some(Frame::Map(frame)) => match frame.pending_key.take() {
                None => frame.pending_key = Some(node),
                Some(key) if key.as_str() == Some("<<") => match merged_maps(&node) {
                    true => frame.merges.push(node),
                    // As PyYAML refuses it, rather than merging nothing.
                    false => self.fail(node.error(format!(
                        "a merge key `<<` takes a mapping or a list of mappings, found {}",
                        node.kind()
                    ))),
                },
                Some(key) => {
                    if let Err(err) = frame.insert(key, node) {
                        self.fail(err);
                    }
                }
            },
        }
    }
}

/// What a merge key can merge: a mapping, or a list of mappings.
fn merged_maps(node: &Node) -> bool {
    match &node.value {
        Value::Map(_) => true,
        Value::Seq(items) => items.iter().all(|i| i.as_map().is_some()),
        _ => false,
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let span = span_at(&self.source, &mark);
        let new = matches!(
            ev,
            Event::Scalar(..) | Event::SequenceStart(..) | Event::MappingStart(..)
        );
        if new && !self.count(1, &span) {
            return;
        }
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                if tag.as_ref().is_some_and(|t| t.suffix == "vault") {
                    return match vault::open_or_defer(&text, &span) {
                        Ok(plain) => {
                            if vault::deferred(&plain).is_none() {
                                vault::reveal(&plain);
                            }
                            self.push_node(Node::new(Value::Str(plain), span), anchor);
                        }
                        Err(e) => self.fail(e),
                    };
                }
                let forced_str = tag.is_some_and(|t| t.suffix == "str");
                let value = if style == TScalarStyle::Plain && !forced_str {
                    resolve_plain(&text)
                } else {
                    Value::Str(text)
                };
                self.push_node(Node::new(value, span), anchor);
            }
            Event::SequenceStart(anchor, _) => {
                self.stack.push(Frame::Seq(Vec::new(), span, anchor))
            }
            Event::MappingStart(anchor, _) => {
                self.stack.push(Frame::Map(MapFrame::new(span, anchor)))
            }
            Event::SequenceEnd => {
                if let Some(Frame::Seq(items, span, anchor)) = self.stack.pop() {
                    self.push_node(Node::new(Value::Seq(items), span), anchor);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map(frame)) = self.stack.pop() {
                    let (node, anchor) = frame.finish();
                    self.push_node(node, anchor);
                }
            }
            Event::DocumentStart if self.root.is_some() => {
                self.error.get_or_insert_with(|| {
                    Diagnostic::new(&span, "a second YAML document ('---') in one file").with_hint(
                        "nodeprov reads one document per file; merge them or split the file",
                    )
                });
            }
            Event::Alias(id) => self.alias(id, span),
            _ => {}
        }
    }
}

impl Builder {
    fn alias(&mut self, id: usize, span: Span) {
        let Some((node, size)) = self.anchors.get(&id) else {
            self.fail(Diagnostic::new(&span, "unknown YAML alias"));
            return;
        };
        self.alias_nodes += size;
        if self.alias_nodes > MAX_ALIAS_NODES {
            let message = format!("YAML aliases expand to more than {MAX_ALIAS_NODES} nodes");
            let hint =
                "each alias copies its anchor's whole value; repeat less, or write the values out";
            self.fail(Diagnostic::new(&span, message).with_hint(hint));
            return;
        }
        let mut node = node.clone();
        if !self.count(*size, &span) {
            return;
        }
        node.span = span;
        self.push_node(node, 0);
    }

    /// Adds `n` nodes to the document's count; false (with the error
    /// recorded) once it passes [`MAX_NODES`].
    fn count(&mut self, n: usize, span: &Span) -> bool {
        self.nodes += n;
        if self.nodes <= MAX_NODES {
            return true;
        }
        let message = format!("YAML document has more than {MAX_NODES} values");
        self.fail(Diagnostic::new(span, message).with_hint("split it into several files"));
        false
    }

    /// Keeps the first error; building stops there.
    fn fail(&mut self, err: Diagnostic) {
        self.error.get_or_insert(err);
    }
}

/// Nodes in a tree, the node itself included.
fn node_count(node: &Node) -> usize {
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(node_count).sum(),
        Value::Map(entries) => entries
            .iter()
            .map(|(k, v)| node_count(k) + node_count(v))
            .sum(),
        _ => 0,
    }
}

fn resolve_plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return Value::Bool(true)
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return Value::Bool(false)
        }
        _ => {}
    }
    if let Some(i) = parse_int(text) {
        return Value::Int(i);
    }
    if looks_like_float(text) {
        if let Ok(f) = text.parse::<f64>() {
            return Value::Float(f);
        }
    }
    if let Some(shown) = timestamp(text) {
        return Value::Str(shown);
    }
    Value::Str(text.to_string())
}

/// A YAML 1.1 timestamp with a time of day, as a template shows the
/// datetime PyYAML makes of it (Python's `str()`: `2020-01-01 12:42:42`,
/// microseconds when there are any, the offset when one is given). A date
/// alone already reads as Python shows it.
fn timestamp(text: &str) -> Option<String> {
    static STAMP: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?$",
        )
        .expect("valid")
    });
    let c = STAMP.captures(text)?;
    let n = |i: usize| {
        c.get(i)
            .map_or(0, |m| m.as_str().parse::<u32>().unwrap_or(0))
    };
    let mut out = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        n(1),
        n(2),
        n(3),
        n(4),
        n(5),
        n(6)
    );
    let fraction = c.get(7).map_or("", |m| m.as_str());
    let micros: String = fraction
        .chars()
        .chain(std::iter::repeat('0'))
        .take(6)
        .collect();
    if micros != "000000" {
        out.push('.');
        out.push_str(&micros);
    }
    match (c.get(8).map(|m| m.as_str()), c.get(9).map(|m| m.as_str())) {
        (Some("Z"), _) => out.push_str("+00:00"),
        (Some(_), Some(sign)) => out.push_str(&format!("{sign}{:02}:{:02}", n(10), n(11))),
        _ => {}
    }
    Some(out)
}

fn parse_int(text: &str) -> Option<i64> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()?
    } else if let Some(oct) = digits.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()?
    } else if digits.len() > 1
        && digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit())
    {
        // YAML 1.1 octal, as in Ansible's `mode: 0644`.
        i64::from_str_radix(digits, 8).ok()?
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    Some(if neg { -value } else { value })
}

fn looks_like_float(text: &str) -> bool {
    let body = text.trim_start_matches(['-', '+']);
    body.contains('.')
        && body.chars().any(|c| c.is_ascii_digit())
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_has_a_position() {
        let doc = load_str("- name: x\n  sysctl:\n    key: vm.swappiness\n", "p.yml").unwrap();
        let task = &doc.as_seq().unwrap()[0];
        assert_eq!(task.span.location(), "p.yml:1:3");
        let key = task.get("sysctl").unwrap().get("key").unwrap();
        assert_eq!(key.span.location(), "p.yml:3:10");
        assert_eq!(key.as_str(), Some("vm.swappiness"));
    }

    #[test]
    fn plain_scalars_resolve_like_yaml_1_1() {
        let doc = load_str(
            "a: yes\nb: 'yes'\nc: 10\nd: 0.5\ne: ~\nf: 0644\ng: 1.2.3\n",
            "x",
        )
        .unwrap();
        assert_eq!(doc.get("a").unwrap().value, Value::Bool(true));
        assert_eq!(doc.get("b").unwrap().value, Value::Str("yes".into()));
        assert_eq!(doc.get("c").unwrap().value, Value::Int(10));
        assert_eq!(doc.get("d").unwrap().value, Value::Float(0.5));
        assert_eq!(doc.get("e").unwrap().value, Value::Null);
        assert_eq!(doc.get("f").unwrap().value, Value::Int(0o644));
        assert_eq!(doc.get("g").unwrap().value, Value::Str("1.2.3".into()));
    }

    #[test]
    fn timestamps_read_as_a_template_shows_pyyamls_datetime() {
        let doc = load_str(
            "a: 2020-01-01T12:42:42\nb: 2020-01-01 12:42:42.5Z\nc: 2020-1-2t3:04:05-07:00\nd: 2020-01-01\ne: '2020-01-01T12:42:42'\n",
            "x",
        )
        .unwrap();
        let text = |k: &str| doc.get(k).unwrap().value.clone();
        assert_eq!(text("a"), Value::Str("2020-01-01 12:42:42".into()));
        assert_eq!(
            text("b"),
            Value::Str("2020-01-01 12:42:42.500000+00:00".into())
        );
        assert_eq!(text("c"), Value::Str("2020-01-02 03:04:05-07:00".into()));
        assert_eq!(text("d"), Value::Str("2020-01-01".into()));
        assert_eq!(
            text("e"),
            Value::Str("2020-01-01T12:42:42".into()),
            "quoted: text"
        );
    }

    #[test]
    fn quoted_continuation_left_of_the_block_reads_as_pyyaml_does() {
        // Values as PyYAML's safe_load gives them for the same text.
        let text = "- name: p2p\n  shell: \"grep 'x' | sed 's/  1/\n/g' | cut \\\"-f\\\"\"\n  register: r\n\
                    - debug:\n    msg: 'it''s\n\nnext\nlast'\n  when: true\n";
        let doc = load_str(text, "t.yml").unwrap();
        let Value::Seq(tasks) = &doc.value else {
            panic!("{doc:?}")
        };
        assert_eq!(
            tasks[0].get("shell").unwrap().as_str(),
            Some("grep 'x' | sed 's/  1/ /g' | cut \"-f\"")
        );
        assert_eq!(
            tasks[0].get("register").unwrap().span.location(),
            "t.yml:4:13"
        );
        let msg = tasks[1].get("debug").unwrap().get("msg").unwrap();
        assert_eq!(msg.as_str(), Some("it's\nnext last"));
        assert_eq!(tasks[1].get("when").unwrap().span.location(), "t.yml:10:9");
    }

    #[test]
    fn syntax_error_names_position() {
        let err = load_str("a: [1, 2\nb: 3\n", "bad.yml").unwrap_err();
        assert!(err.span.location().starts_with("bad.yml:"), "{err}");
        assert!(err.message.starts_with("invalid YAML"), "{err}");
    }

    #[test]
    fn duplicate_keys_are_rejected_with_both_positions() {
        let err = load_str("a: 1\nb: 2\na: 3\n", "d.yml").unwrap_err();
        assert_eq!(err.span.location(), "d.yml:3:1");
        assert_eq!(err.hint.as_deref(), Some("first defined at d.yml:1:1"));
    }

    #[test]
    fn a_second_document_is_an_error() {
        let err = load_str("- a\n---\n- b\n", "two.yml").unwrap_err();
        assert_eq!(err.span.location(), "two.yml:2:1");
        assert!(err.message.contains("second YAML document"), "{err}");
        assert!(load_str("---\n- a\n...\n", "one.yml").is_ok());
    }

    #[test]
    fn anchors_and_merge_keys_resolve() {
        let doc = load_str("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "m").unwrap();
        let other = doc.get("other").unwrap();
        assert_eq!(other.get("x").unwrap().value, Value::Int(1));
        assert_eq!(other.get("y").unwrap().value, Value::Int(3));
    }

    /// Nine aliases of nine aliases, nine levels deep: 387 million nodes.
    fn billion_laughs() -> String {
        let mut doc = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for level in 1..9 {
            let prev = format!("*a{}", level - 1);
            let items = vec![prev; 9].join(", ");
            doc.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        doc
    }

    #[test]
    fn alias_expansion_is_bounded_and_reported_at_the_alias() {
        let err = load_str(&billion_laughs(), "lol.yml").unwrap_err();
        assert!(err.message.contains("aliases expand to more than"), "{err}");
        assert_eq!(err.span.location(), "lol.yml:6:10");
    }

    /// The value bound is against many tiny values, not against real
    /// files: a vars file mapping a million names (2,000,001 nodes, 20 s to
    /// load in a debug build) fits it, as its count on a thousand shows;
    /// aliases keep their own, smaller bound (the tests above).
    #[test]
    fn a_mapping_of_a_million_keys_fits_the_value_bound() {
        let keys = |n: usize| -> String { (0..n).map(|i| format!("k{i}: {i}\n")).collect() };
        let doc = load_str(&keys(1_000), "thousand.yml").unwrap();
        assert_eq!(node_count(&doc), 2 * 1_000 + 1);
        let million_nodes = 2 * 1_000_000 + 1;
        assert!(million_nodes <= MAX_NODES, "{million_nodes} > {MAX_NODES}");
    }

    #[test]
    fn moderate_alias_use_still_loads() {
        let doc = load_str("a: &a [1, 2, 3]\nb: [*a, *a, *a]\n", "ok.yml").unwrap();
        assert_eq!(doc.get("b").unwrap().as_seq().unwrap().len(), 3);
    }

    /// yaml-rust2 bounds nesting itself; deeper trees would overflow the
    /// stack when converted or dropped.
    #[test]
    fn deep_nesting_is_a_positioned_error() {
        let deep = "[".repeat(100_000);
        let err = load_str(&deep, "deep.yml").unwrap_err();
        assert!(err.message.contains("recursion limit"), "{err}");
        assert!(err.span.location().starts_with("deep.yml:1:"), "{err}");
    }

    #[test]
    fn large_mappings_load_whole_and_still_catch_duplicates() {
        let mut doc: String = (0..40_000).map(|i| format!("k{i}: {i}\n")).collect();
        let loaded = load_str(&doc, "big.yml").unwrap();
        let entries = loaded.as_map().unwrap();
        assert_eq!(entries.len(), 40_000);
        assert_eq!(entries[39_999].1.value, Value::Int(39_999));
        doc.push_str("k20000: again\n");
        let err = load_str(&doc, "big.yml").unwrap_err();
        assert_eq!(err.span.location(), "big.yml:40001:1");
        assert_eq!(
            err.hint.as_deref(),
            Some("first defined at big.yml:20001:1")
        );
    }

    #[test]
    fn scalar_keys_of_different_types_are_different_keys() {
        let doc = load_str("1: a\n'1': b\ntrue: c\n'true': d\n0.0: e\n", "t").unwrap();
        assert_eq!(doc.as_map().unwrap().len(), 5);
        let err = load_str("0.0: a\n-0.0: b\n", "t").unwrap_err();
        assert!(err.message.contains("duplicate key"), "{err}");
    }

    const SEEDS: &[&str] = &[
        include_str!("../../playbooks/gpu-node.yml"),
        include_str!("../../playbooks/sysctl-rollout.yml"),
        "base: &b {x: 1, y: [a, b]}\nother:\n  <<: *b\n  y: 3\nl: &l [*b, *b]\nm: [*l, *l]\n",
        "- {a: 'q''s', b: \"e\\n\", c: |\n    block\n  , d: >-\n    folded\n}\n",
        "? [complex, key]\n: value\n!!str 1: !!int '2'\n--- \nsecond: doc\n",
    ];

    proptest::proptest! {
        #![proptest_config(crate::load::fuzz::config())]

        #[test]
        fn loader_returns_ok_or_a_positioned_error_within_limits(
            text in crate::load::fuzz::mutated(SEEDS)
        ) {
            match load_str(&text, "f.yml") {
                // Aliases add at most the limit; every other node needs at
                // least one byte, or two for an implicit null and its key.
                Ok(doc) => proptest::prop_assert!(
                    node_count(&doc) <= 2 * text.len() + 1 + MAX_ALIAS_NODES
                ),
                Err(e) => {
                    proptest::prop_assert!(e.span.line >= 1);
                    proptest::prop_assert!(e.span.line <= text.lines().count() + 1);
                }
            }
        }
    }

    #[test]
    fn a_tab_in_indentation_is_reported_at_the_tab() {
        let err = load_str("- hosts: all\n\ttasks: []\n", "t.yml").unwrap_err();
        assert!(err.message.contains("found a tab"), "{err}");
        assert_eq!(err.span.location(), "t.yml:2:1");
        assert!(err.hint.unwrap().contains("tabs are not allowed"));
    }
}
