//! Ansible Vault: the envelope and cipher ([`format`]), where passwords come
//! from ([`secrets`]), and, here, the run's passwords and the plaintexts they
//! revealed, which every output masks.
//!
//! Both are process-wide: every YAML read (playbooks, inventories, vars
//! files, `include_vars` while planning, `-e @file`) and every `copy` or
//! `template` source goes through one loader, and threading a keyring
//! through each of those signatures would touch every loader for a value
//! set once, before anything is loaded.

pub mod format;
pub mod secrets;

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use crate::base::diag::{Diagnostic, Span};
use crate::base::input::ReadError;
use crate::base::printable::printable;
pub use format::{is_vault, Failure, VaultSecret};

/// What a report shows in place of a decrypted value.
const MASK: &str = "********";

/// Shorter plaintexts are not masked: they would mask ordinary words and
/// numbers (`ok=1`) all over a report.
const MIN_MASKED: usize = 4;

static KEYRING: RwLock<Option<Arc<Vec<VaultSecret>>>> = RwLock::new(None);
static REVEALED: Mutex<Vec<Revealed>> = Mutex::new(Vec::new());

/// The run's passwords, given before anything is loaded.
pub fn unlock(secrets: Vec<VaultSecret>) {
    *KEYRING.write().unwrap() = Some(Arc::new(secrets));
}

fn keyring() -> Arc<Vec<VaultSecret>> {
    KEYRING.read().unwrap().clone().unwrap_or_default()
}

/// Decrypts a vault found at `at` with the run's passwords; the error names
/// the place and the vault id. The plaintext is not registered: the caller
/// knows which parts of it are values.
pub fn open(text: &str, at: &Span) -> Result<String, Diagnostic> {
    let where_ = format!("{}:{}", at.source.name, at.line.max(1));
    let plain = decrypt(text, &where_).map_err(|(failure, message)| {
        let d = Diagnostic::new(at, message);
        match failure {
            Failure::NoPassword => d.with_hint(PASSWORD_HINT),
            _ => d,
        }
    })?;
    Ok(plain)
}

/// The template an inline `!vault` value the run's passwords cannot open
/// stands as: reading it fails, as reading such a value fails in Ansible,
/// and a value nothing reads costs nothing. [`deferred`] gives back why.
pub fn open_or_defer(text: &str, at: &Span) -> Result<String, Diagnostic> {
    let where_ = format!("{}:{}", at.source.name, at.line.max(1));
    match decrypt(text, &where_) {
        Ok(plain) => Ok(plain),
        Err((Failure::NoPassword | Failure::HmacMismatch, message)) => {
            let quoted = serde_json::to_string(&message).expect("a string");
            Ok(format!("{{{{ {UNDECRYPTABLE}({quoted}) }}}}"))
        }
        Err(_) => open(text, at),
    }
}

/// The template function a deferred value calls.
pub const UNDECRYPTABLE: &str = "__nodeprov_undecryptable";

/// Why a value [`open_or_defer`] deferred cannot be read, with the hint
/// to give a password; `None` for any other text.
pub fn deferred(text: &str) -> Option<(String, Option<&'static str>)> {
    let quoted = text
        .strip_prefix(&format!("{{{{ {UNDECRYPTABLE}("))?
        .strip_suffix(") }}")?;
    let message: String = serde_json::from_str(quoted).ok()?;
    let no_password = message.ends_with(&Failure::NoPassword.to_string());
    Some((message, no_password.then_some(PASSWORD_HINT)))
}

const PASSWORD_HINT: &str =
    "give it with --vault-password-file FILE, --vault-id LABEL@SOURCE or --ask-vault-pass";

fn decrypt(text: &str, where_: &str) -> Result<String, (Failure, String)> {
    let id = format::vault_id(text);
    let message = |f: &Failure| format!("cannot decrypt {where_} (vault id '{id}'): {f}");
    let bytes = format::decrypt(text, &keyring()).map_err(|f| {
        let m = message(&f);
        (f, m)
    })?;
    String::from_utf8(bytes).map_err(|_| {
        let f = Failure::Malformed("the plaintext is not UTF-8 text");
        let m = message(&f);
        (f, m)
    })
}

/// A controller file (`copy`/`template` `src:`) as text, decrypted when it
/// is a vault; its plaintext is masked in every report from then on.
pub fn read_source(path: &Path) -> Result<String, ReadError> {
    let text = crate::base::input::read_text(path)?;
    if !is_vault(&text) {
        return Ok(text);
    }
    let name = path.display().to_string();
    let plain = decrypt(&text, &format!("{name}:1")).map_err(|(_, message)| ReadError::Vault {
        path: name,
        message,
    })?;
    reveal(&plain);
    Ok(plain)
}

/// A text that outputs mask. A decrypted number or boolean is masked only
/// where it stands as a word of its own: `1234` in `12345` or `true` in
/// `untrue` is someone else's text.
struct Revealed {
    text: String,
    whole_word: bool,
}

/// Marks a decrypted string as secret: it, each line of it (for diffs that
/// show a line at a time), and each of those as JSON, Python and a
/// terminal escape them, since an output may show an escaped form (a tab
/// as `\t` or `\x09`, `to_json` of the value).
pub fn reveal(plain: &str) {
    let lines = plain.lines().map(str::trim);
    let parts: Vec<&str> = std::iter::once(plain).chain(lines).collect();
    let mut forms = Vec::new();
    for part in parts {
        forms.extend(escaped_forms(part));
    }
    remember(forms, false);
}

/// Marks a decrypted number or boolean as secret, by each text it prints
/// as (`True` and `true`, `1.5`).
pub fn reveal_scalar(renderings: &[String]) {
    remember(renderings.to_vec(), true);
}

fn remember(forms: Vec<String>, whole_word: bool) {
    let mut revealed = REVEALED.lock().unwrap();
    for text in forms {
        if text.chars().count() >= MIN_MASKED && !revealed.iter().any(|r| r.text == text) {
            revealed.push(Revealed { text, whole_word });
        }
    }
    // Longest first, so a secret that holds another is masked whole.
    revealed.sort_by_key(|r| std::cmp::Reverse(r.text.len()));
}

/// `text` as it is, and as JSON (Python's `json.dumps`, with and without
/// `ensure_ascii`) and the terminal reports escape it.
fn escaped_forms(text: &str) -> Vec<String> {
    let json = serde_json::to_string(text).expect("a string is JSON");
    let json = json[1..json.len() - 1].to_string();
    let ascii: String = json
        .chars()
        .map(|c| match c.is_ascii() {
            true => c.to_string(),
            false => c
                .encode_utf16(&mut [0; 2])
                .iter()
                .map(|u| format!("\\u{u:04x}"))
                .collect(),
        })
        .collect();
    let mut forms = vec![text.to_string()];
    for form in [
        json,
        ascii,
        printable(text, false).into_owned(),
        printable(text, true).into_owned(),
    ] {
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// Text with every revealed value masked.
pub fn redact(text: &str) -> Cow<'_, str> {
    let revealed = REVEALED.lock().unwrap();
    let mut out = Cow::Borrowed(text);
    for secret in revealed.iter() {
        if !out.contains(secret.text.as_str()) {
            continue;
        }
        let masked = match secret.whole_word {
            true => replace_words(&out, &secret.text),
            false => Some(out.replace(secret.text.as_str(), MASK)),
        };
        if let Some(masked) = masked {
            out = Cow::Owned(masked);
        }
    }
    out
}

/// `text` with each occurrence of `word` that no letter, digit, `_` or `.`
/// touches masked; `None` when there is none.
fn replace_words(text: &str, word: &str) -> Option<String> {
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let mut masked = false;
    for (at, _) in text.match_indices(word) {
        let end = at + word.len();
        if at < rest || joins(text[..at].chars().next_back()) || joins(text[end..].chars().next()) {
            continue;
        }
        out.push_str(&text[rest..at]);
        out.push_str(MASK);
        rest = end;
        masked = true;
    }
    out.push_str(&text[rest..]);
    masked.then_some(out)
}

/// A JSON document with every revealed value masked, in keys and strings,
/// and numbers that print as a revealed one. Booleans stay: a report's
/// structure is made of them (`changed`, `failed`).
pub fn redact_json(value: &mut serde_json::Value) {
    redact_json_as(value, false);
}

/// `redact_json` for a document that is all data (a host's variables), so
/// a revealed boolean is masked too.
pub fn redact_json_data(value: &mut serde_json::Value) {
    redact_json_as(value, true);
}

fn redact_json_as(value: &mut serde_json::Value, booleans: bool) {
    use serde_json::Value;
    let masked_scalar = |text: &str| matches!(redact(text), Cow::Owned(m) if m == MASK);
    match value {
        Value::String(s) => {
            if let Cow::Owned(masked) = redact(s) {
                *s = masked;
            }
        }
        Value::Number(n) if masked_scalar(&n.to_string()) => *value = MASK.into(),
        Value::Bool(b) if booleans && masked_scalar(&b.to_string()) => *value = MASK.into(),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json_as(v, booleans)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                redact_json_as(&mut v, booleans);
                map.insert(redact(&k).into_owned(), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revealed_values_and_their_lines_are_masked_in_text_and_json() {
        reveal("first-line-of-key\nsecond-line-of-key\n");
        reveal("abc");
        let text = "diff: +first-line-of-key, abc";
        assert_eq!(redact(text), "diff: +********, abc");
        let mut doc = serde_json::json!({
            "second-line-of-key": ["first-line-of-key\nsecond-line-of-key\n", 3],
        });
        redact_json(&mut doc);
        assert_eq!(doc, serde_json::json!({"********": ["********", 3]}));
    }

    #[test]
    fn escaped_forms_numbers_and_booleans_are_masked() {
        reveal("tab\there-secret é");
        reveal_scalar(&["73915286".into()]);
        reveal_scalar(&["false".into(), "False".into()]);
        for shown in [
            "tab\there-secret é",
            "\"tab\\there-secret \\u00e9\"",
            "tab\\x09here-secret é",
        ] {
            assert!(!redact(shown).contains("here-secret"), "{shown}");
        }
        assert_eq!(
            redact("id=73915286, 173915286, 73915286.5"),
            "id=********, 173915286, 73915286.5"
        );
        assert_eq!(
            redact("flag=False; unfalse, false_x"),
            "flag=********; unfalse, false_x"
        );
        let mut doc = serde_json::json!({"n": 73915286, "b": false, "m": 7391528});
        redact_json(&mut doc);
        assert_eq!(
            doc,
            serde_json::json!({"n": "********", "b": false, "m": 7391528})
        );
        redact_json_data(&mut doc);
        assert_eq!(doc["b"], "********");
    }
}
