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
pub use format::{is_vault, Failure, VaultSecret};

/// What a report shows in place of a decrypted value.
const MASK: &str = "********";

/// Shorter plaintexts are not masked: they would mask ordinary words and
/// numbers (`ok=1`) all over a report.
const MIN_MASKED: usize = 4;

static KEYRING: RwLock<Option<Arc<Vec<VaultSecret>>>> = RwLock::new(None);
static REVEALED: Mutex<Vec<String>> = Mutex::new(Vec::new());

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
            Failure::NoPassword => d.with_hint(
                "give it with --vault-password-file FILE, --vault-id LABEL@SOURCE or --ask-vault-pass",
            ),
            _ => d,
        }
    })?;
    Ok(plain)
}

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

/// Marks a decrypted value as secret: it, and each line of it, for diffs
/// that show a line at a time.
pub fn reveal(plain: &str) {
    let mut revealed = REVEALED.lock().unwrap();
    let lines = plain.lines().map(str::trim);
    for part in std::iter::once(plain).chain(lines) {
        if part.chars().count() >= MIN_MASKED && !revealed.iter().any(|r| r == part) {
            revealed.push(part.to_string());
        }
    }
    // Longest first, so a secret that holds another is masked whole.
    revealed.sort_by_key(|r| std::cmp::Reverse(r.len()));
}

/// Text with every revealed value masked.
pub fn redact(text: &str) -> Cow<'_, str> {
    let revealed = REVEALED.lock().unwrap();
    let mut out = Cow::Borrowed(text);
    for secret in revealed.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), MASK));
        }
    }
    out
}

/// A JSON document with every revealed value masked, in keys and strings.
pub fn redact_json(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Cow::Owned(masked) = redact(s) {
                *s = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                redact_json(&mut v);
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
}
