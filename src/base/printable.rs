//! Text from a host or a file made safe to show on a terminal or in a
//! report, one character at a time.

use std::borrow::Cow;
use std::fmt::Write;

/// Text that may hold bytes from a host, made safe for a terminal: control
/// characters (escape sequences, OSC titles, carriage returns, line breaks
/// inside what is one line) are shown as `\x1b`-style escapes, and format
/// characters (bidi overrides, zero-width spaces) as `\u{202e}`-style
/// ones. `keep_tab` leaves tabs, for diff bodies. The JSON report keeps the
/// text exact.
pub fn printable(text: &str, keep_tab: bool) -> Cow<'_, str> {
    let escaped = |c: char| (c.is_control() && !(keep_tab && c == '\t')) || is_format(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c.is_control() && escaped(c) {
            // Every control character is below U+00A0.
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else if escaped(c) {
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Unicode's format characters, general category Cf (Unicode 16): they are
/// invisible, and the bidi ones reorder what follows, so a host's text
/// could read as something it does not say.
const FORMAT: [std::ops::RangeInclusive<char>; 21] = [
    '\u{00ad}'..='\u{00ad}',
    '\u{0600}'..='\u{0605}',
    '\u{061c}'..='\u{061c}',
    '\u{06dd}'..='\u{06dd}',
    '\u{070f}'..='\u{070f}',
    '\u{0890}'..='\u{0891}',
    '\u{08e2}'..='\u{08e2}',
    '\u{180e}'..='\u{180e}',
    '\u{200b}'..='\u{200f}',
    '\u{202a}'..='\u{202e}',
    '\u{2060}'..='\u{2064}',
    '\u{2066}'..='\u{206f}',
    '\u{feff}'..='\u{feff}',
    '\u{fff9}'..='\u{fffb}',
    '\u{110bd}'..='\u{110bd}',
    '\u{110cd}'..='\u{110cd}',
    '\u{13430}'..='\u{1343f}',
    '\u{1bca0}'..='\u{1bca3}',
    '\u{1d173}'..='\u{1d17a}',
    '\u{e0001}'..='\u{e0001}',
    '\u{e0020}'..='\u{e007f}',
];

fn is_format(c: char) -> bool {
    FORMAT.iter().any(|r| r.contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        let hostile = "a\x1b]0;owned\x07b\x1b[2Jc\rd\te\u{9b}f\ng é";
        assert_eq!(
            printable(hostile, false),
            "a\\x1b]0;owned\\x07b\\x1b[2Jc\\x0dd\\x09e\\x9bf\\x0ag é"
        );
        assert_eq!(printable("d\te", true), "d\te");
        assert!(matches!(printable("plain é", false), Cow::Borrowed(_)));
    }

    #[test]
    fn format_characters_are_shown_not_sent() {
        // "txt.exe" written backwards behind a right-to-left override.
        let hostile =
            "ok\u{202e}exe.txt\u{202c} \u{200b}x\u{2066}y\u{2069}\u{feff}\u{ad}\u{e0041}\u{1b}";
        assert_eq!(
            printable(hostile, true),
            "ok\\u{202e}exe.txt\\u{202c} \\u{200b}x\\u{2066}y\\u{2069}\\u{feff}\\u{00ad}\\u{e0041}\\x1b"
        );
        // Right-to-left letters are not format characters.
        assert_eq!(printable("שלום عربى", false), "שלום عربى");
    }

    #[test]
    fn the_format_ranges_are_exactly_unicodes_cf() {
        use unicode_general_category::{get_general_category, GeneralCategory};
        let wrong: Vec<String> = (0..=u32::from(char::MAX))
            .filter_map(char::from_u32)
            .filter(|&c| is_format(c) != (get_general_category(c) == GeneralCategory::Format))
            .map(|c| format!("U+{:04X}", u32::from(c)))
            .collect();
        assert!(wrong.is_empty(), "{wrong:?}");
    }
}
