//! Source positions and caret-style rendering of user-input errors.

use std::fmt;
use std::sync::Arc;

/// A source file kept in memory so that errors can quote the offending line.
#[derive(Debug)]
pub struct Source {
    pub name: String,
    pub text: String,
}

/// A position inside a [`Source`]: 1-based line and column.
#[derive(Clone, Debug)]
pub struct Span {
    pub source: Arc<Source>,
    pub line: usize,
    pub col: usize,
}

impl Span {
    pub fn new(source: Arc<Source>, line: usize, col: usize) -> Self {
        Span { source, line, col }
    }

    /// A span for values that come from no file (command line, defaults).
    pub fn synthetic(name: &str) -> Self {
        let source = Arc::new(Source {
            name: name.to_string(),
            text: String::new(),
        });
        Span::new(source, 0, 0)
    }

    /// File order: by file name, line, then column.
    pub fn order(&self, other: &Span) -> std::cmp::Ordering {
        (self.source.name.as_str(), self.line, self.col).cmp(&(
            other.source.name.as_str(),
            other.line,
            other.col,
        ))
    }

    /// `file:line:col`, or just the name for synthetic spans.
    pub fn location(&self) -> String {
        if self.line == 0 {
            self.source.name.clone()
        } else {
            format!("{}:{}:{}", self.source.name, self.line, self.col)
        }
    }

    fn source_line(&self) -> Option<&str> {
        if self.line == 0 {
            return None;
        }
        self.source.text.lines().nth(self.line - 1)
    }
}

impl PartialEq for Span {
    fn eq(&self, other: &Self) -> bool {
        self.source.name == other.source.name && self.line == other.line && self.col == other.col
    }
}

/// One user-facing error: what is wrong, where, and how to fix it.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub message: String,
    pub span: Span,
    pub hint: Option<String>,
}

impl Diagnostic {
    pub fn new(span: &Span, message: impl Into<String>) -> Self {
        Diagnostic {
            message: message.into(),
            span: span.clone(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        write!(f, "  --> {}", self.span.location())?;
        if let Some(line) = self.span.source_line() {
            let gutter = self.span.line.to_string();
            let pad = " ".repeat(gutter.len());
            let (shown, caret) = window(line, self.span.col);
            write!(f, "\n {pad} |\n {gutter} | {shown}\n {pad} | ")?;
            write!(f, "{}^", " ".repeat(caret))?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  = hint: {hint}")?;
        }
        Ok(())
    }
}

/// Characters of a quoted source line shown on each side of the column; a
/// 50 MB line must not come back whole in an error.
const WINDOW: usize = 60;

/// The part of `line` around 1-based character column `col`, with `…` where
/// it was cut, and the caret's offset in what is shown.
fn window(line: &str, col: usize) -> (std::borrow::Cow<'_, str>, usize) {
    let at = col.saturating_sub(1);
    let start = at.saturating_sub(WINDOW);
    let byte = |n: usize| line.char_indices().nth(n).map_or(line.len(), |(i, _)| i);
    let (from, to) = (byte(start), byte(at + WINDOW));
    if from == 0 && to == line.len() {
        return (line.into(), at);
    }
    let head = if from > 0 { "…" } else { "" };
    let tail = if to < line.len() { "…" } else { "" };
    let caret = at - start + head.chars().count();
    (format!("{head}{}{tail}", &line[from..to]).into(), caret)
}

/// User text echoed in a message, cut to [`WINDOW`] characters with `…`.
pub fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(WINDOW) {
        Some((cut, _)) => format!("{}…", &text[..cut]).into(),
        None => text.into(),
    }
}

/// The candidate closest to `name`, when it is close enough to be a likely
/// typo: a few edits, fewer for short names (`stat` is not a typo of `apt`).
pub fn suggest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = match name.chars().count() {
        0..=4 => 1,
        5..=8 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_typos_not_lookalikes() {
        let names = ["apt", "dnf", "sysctl", "content", "handlers"];
        assert_eq!(suggest("sysctll", names), Some("sysctl"));
        assert_eq!(suggest("contnet", names), Some("content"));
        assert_eq!(suggest("hanlders", names), Some("handlers"));
        assert_eq!(suggest("stat", names), None);
        assert_eq!(suggest("find", names), None);
    }

    #[test]
    fn renders_line_and_caret_under_column() {
        let source = Arc::new(Source {
            name: "play.yml".into(),
            text: "- hosts: all\n  tasks:\n    - sysctll: {}\n".into(),
        });
        let d = Diagnostic::new(&Span::new(source, 3, 7), "unknown module 'sysctll'")
            .with_hint("did you mean 'sysctl'?");
        let text = d.to_string();
        assert_eq!(
            text,
            "unknown module 'sysctll'\n  --> play.yml:3:7\n   |\n 3 |     - sysctll: {}\n   |       ^\n  = hint: did you mean 'sysctl'?"
        );
    }

    #[test]
    fn long_lines_are_cut_to_a_window_around_the_column() {
        let line = format!("{}X{}", "a".repeat(1_000_000), "b".repeat(1_000_000));
        let source = Arc::new(Source {
            name: "big.ini".into(),
            text: format!("[g]\n{line}\n"),
        });
        let text = Diagnostic::new(&Span::new(source, 2, 1_000_001), "here").to_string();
        assert!(text.len() < 400, "{} bytes", text.len());
        let shown = format!("…{}X{}…", "a".repeat(WINDOW), "b".repeat(WINDOW - 1));
        assert!(text.contains(&format!(" 2 | {shown}\n")), "{text}");
        let caret_line = text.lines().last().unwrap();
        assert_eq!(caret_line, format!("   | {}^", " ".repeat(WINDOW + 1)));
        assert_eq!(clip("short"), "short");
        let long = clip(&line);
        assert_eq!(long.chars().count(), WINDOW + 1);
        assert!(long.ends_with("a…"), "{long}");
        let short = window("é short line", 3);
        assert_eq!(short, ("é short line".into(), 2));
        let long = "z".repeat(200);
        let (start, caret) = window(&long, 1);
        assert_eq!((start.chars().count(), caret), (WINDOW + 1, 0));
    }

    #[test]
    fn suggests_close_names_only() {
        let names = ["sysctl", "swapfile", "template"];
        assert_eq!(suggest("sysctll", names), Some("sysctl"));
        assert_eq!(suggest("zzz", names), None);
    }
}
