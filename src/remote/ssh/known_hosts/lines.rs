//! One known_hosts line as OpenSSH reads it: an optional `@revoked` or
//! `@cert-authority` marker, host patterns (with `*`, `?` and `!`
//! negation) or one hashed `|1|salt|hash` name, then the key type and key.

use base64::Engine;

use super::super::config::host_matches;
use super::super::error::LineError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A plain line: this key is this host's.
    Plain,
    /// This key must never be trusted.
    Revoked,
    /// This key signs host certificates; we never trust through it.
    CertAuthority,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    pub marker: Marker,
    names: Names,
    pub key_type: String,
    /// The key in base64, as written; compared as text, as libssh2 and
    /// OpenSSH's files both write the canonical encoding.
    pub key: String,
}

#[derive(Debug, PartialEq, Eq)]
enum Names {
    Patterns(Vec<String>),
    Hashed { salt: Vec<u8>, hash: Vec<u8> },
}

/// `None` for blank lines and comments.
pub fn parse(line: &str) -> Result<Option<Entry>, LineError> {
    let mut fields = line.split_whitespace();
    let Some(mut first) = fields.next().filter(|f| !f.starts_with('#')) else {
        return Ok(None);
    };
    let marker = match first {
        "@revoked" => Marker::Revoked,
        "@cert-authority" => Marker::CertAuthority,
        m if m.starts_with('@') => return Err(LineError::Marker(m.to_string())),
        _ => Marker::Plain,
    };
    if marker != Marker::Plain {
        first = fields.next().ok_or(LineError::NoKey)?;
    }
    let names = match first.strip_prefix("|1|") {
        Some(hashed) => parse_hashed(hashed).ok_or_else(|| LineError::Hashed(first.into()))?,
        None => Names::Patterns(first.split(',').map(str::to_string).collect()),
    };
    let (Some(key_type), Some(key)) = (fields.next(), fields.next()) else {
        return Err(LineError::NoKey);
    };
    Ok(Some(Entry {
        marker,
        names,
        key_type: key_type.to_string(),
        key: key.to_string(),
    }))
}

fn parse_hashed(text: &str) -> Option<Names> {
    let (salt, hash) = text.split_once('|')?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Some(Names::Hashed {
        salt: b64.decode(salt).ok()?,
        hash: b64.decode(hash).ok()?,
    })
}

impl Entry {
    /// Whether the line is about `name` (`host` or `[host]:port`): for
    /// patterns, one positive pattern matches and no negated one does, as
    /// OpenSSH's match_hostname; hashed names are OpenSSH's HMAC-SHA1 of
    /// the lowercased name.
    pub fn names(&self, name: &str) -> bool {
        match &self.names {
            Names::Patterns(patterns) => host_matches(patterns, name),
            Names::Hashed { salt, hash } => {
                hmac_sha1(salt, name.to_ascii_lowercase().as_bytes()).is_some_and(|h| h == *hash)
            }
        }
    }
}

/// From the OpenSSL libssh2 links anyway; `None` only if OpenSSL fails.
fn hmac_sha1(key: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    let mut md = [0u8; 20];
    let mut len = 0u32;
    let key_len = i32::try_from(key.len()).ok()?;
    // SAFETY: a fresh HMAC context, freed before returning; `md` has room
    // for a SHA-1 digest and `key` and `data` are valid for their lengths.
    let ok = unsafe {
        let ctx = openssl_sys::HMAC_CTX_new();
        let ok = !ctx.is_null()
            && openssl_sys::HMAC_Init_ex(
                ctx,
                key.as_ptr().cast(),
                key_len,
                openssl_sys::EVP_sha1(),
                std::ptr::null_mut(),
            ) == 1
            && openssl_sys::HMAC_Update(ctx, data.as_ptr(), data.len()) == 1
            && openssl_sys::HMAC_Final(ctx, md.as_mut_ptr(), &mut len) == 1;
        openssl_sys::HMAC_CTX_free(ctx);
        ok
    };
    ok.then(|| md[..len as usize].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAICIxOqNlpEq/88r/8ByK7Xw4FOdH/UJZcnstDUWj+BlK";
    /// `ssh-keygen -H` of `gpu-03`.
    const HASHED: &str = "|1|2ulc5ct2UMEA5hnxH8EXC6+Iz00=|rLYJFB1xzqz8aonSfPo7FGutwtg=";

    fn entry(line: &str) -> Entry {
        parse(line).unwrap().expect("an entry")
    }

    #[test]
    fn markers_are_read_and_the_key_follows_the_names() {
        let e = entry(&format!("@revoked * ssh-ed25519 {KEY} old disk"));
        assert_eq!(e.marker, Marker::Revoked);
        assert_eq!((e.key_type.as_str(), e.key.as_str()), ("ssh-ed25519", KEY));
        assert!(e.names("anything"));
        let e = entry(&format!("@cert-authority *.lab ssh-ed25519 {KEY}"));
        assert_eq!(e.marker, Marker::CertAuthority);
        assert!(e.names("gpu-03.lab") && !e.names("gpu-03.prod"));
        assert_eq!(
            entry(&format!("gpu-03 ssh-ed25519 {KEY}")).marker,
            Marker::Plain
        );
    }

    #[test]
    fn a_negated_pattern_takes_the_host_out_of_the_line() {
        let e = entry(&format!("gpu-*,!gpu-03,10.0.0.3 ssh-ed25519 {KEY}"));
        assert!(e.names("gpu-04") && e.names("10.0.0.3"));
        assert!(!e.names("gpu-03"));
        // Negation wins even over an exact positive name.
        let e = entry(&format!("gpu-03,!gpu-03 ssh-ed25519 {KEY}"));
        assert!(!e.names("gpu-03"));
        // A line of only negations names nothing.
        assert!(!entry(&format!("!gpu-03 ssh-ed25519 {KEY}")).names("gpu-04"));
        let e = entry(&format!("[gpu-03]:2222,GPU-05 ssh-ed25519 {KEY}"));
        assert!(e.names("[gpu-03]:2222") && e.names("gpu-05") && !e.names("gpu-03"));
    }

    #[test]
    fn hashed_names_match_only_their_host() {
        let e = entry(&format!("{HASHED} ssh-ed25519 {KEY}"));
        assert!(e.names("gpu-03") && e.names("GPU-03"));
        assert!(!e.names("gpu-04"));
        let e = entry(&format!("@revoked {HASHED} ssh-ed25519 {KEY}"));
        assert!(e.names("gpu-03") && e.marker == Marker::Revoked);
    }

    #[test]
    fn comments_blank_and_broken_lines() {
        assert_eq!(parse("   # gpu-03 ssh-ed25519 x"), Ok(None));
        assert_eq!(parse("  \t "), Ok(None));
        assert_eq!(
            parse(&format!("@trusted gpu-03 ssh-ed25519 {KEY}")),
            Err(LineError::Marker("@trusted".into()))
        );
        assert_eq!(parse("gpu-03 ssh-ed25519"), Err(LineError::NoKey));
        assert_eq!(parse("@revoked"), Err(LineError::NoKey));
        assert_eq!(
            parse(&format!("|1|no-base64!|x ssh-ed25519 {KEY}")),
            Err(LineError::Hashed("|1|no-base64!|x".into()))
        );
    }
}
