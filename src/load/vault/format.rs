//! The vault envelope and its cipher, as ansible-core's `VaultAES256`
//! writes them: a `$ANSIBLE_VAULT;1.1;AES256` (or `1.2;AES256;<vault id>`)
//! header, then hex, in folded lines, of `hex(salt)\nhex(hmac)\nhex(ciphertext)`.
//! PBKDF2-HMAC-SHA256 (10000 rounds) of the password and salt gives the
//! AES-256 key, the HMAC-SHA256 key and the CTR mode's initial counter block;
//! the plaintext carries PKCS#7 padding.

use std::os::raw::{c_int, c_uint};

const HEADER: &str = "$ANSIBLE_VAULT";
const ITERATIONS: c_int = 10_000;
const KEY_LEN: usize = 32;
const IV_LEN: usize = 16;
const BLOCK: usize = 16;

/// Whether text is a vault (a whole file or a `!vault` scalar).
pub fn is_vault(text: &str) -> bool {
    text.trim_start().starts_with("$ANSIBLE_VAULT;")
}

/// A password and the vault id it was given for (`default` when none was).
pub struct VaultSecret {
    pub label: String,
    password: Vec<u8>,
}

impl VaultSecret {
    pub fn new(label: impl Into<String>, password: Vec<u8>) -> Self {
        VaultSecret {
            label: label.into(),
            password,
        }
    }

    pub fn password(&self) -> &[u8] {
        &self.password
    }
}

impl std::fmt::Debug for VaultSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VaultSecret({}, ********)", self.label)
    }
}

/// Why a vault did not open.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Failure {
    #[error("no vault password was given")]
    NoPassword,
    #[error(
        "no vault password given decrypts it (HMAC mismatch: a wrong password, or tampered data)"
    )]
    HmacMismatch,
    #[error("malformed vault data: {0}")]
    Malformed(&'static str),
}

/// A parsed envelope.
struct Envelope {
    vault_id: Option<String>,
    salt: Vec<u8>,
    hmac: Vec<u8>,
    ciphertext: Vec<u8>,
}

/// The vault id a 1.2 header names, for messages; `default` otherwise.
pub fn vault_id(text: &str) -> String {
    parse(text)
        .ok()
        .and_then(|e| e.vault_id)
        .unwrap_or_else(|| "default".into())
}

/// Decrypts with the secret whose label matches the vault id first, then
/// the others in the order given, as Ansible's `VaultLib.decrypt` does.
pub fn decrypt(text: &str, secrets: &[VaultSecret]) -> Result<Vec<u8>, Failure> {
    let envelope = parse(text)?;
    if secrets.is_empty() {
        return Err(Failure::NoPassword);
    }
    let id = envelope.vault_id.as_deref();
    let matching = secrets.iter().filter(|s| Some(s.label.as_str()) == id);
    let others = secrets.iter().filter(|s| Some(s.label.as_str()) != id);
    for secret in matching.chain(others) {
        let keys = derive(secret.password(), &envelope.salt);
        let (aes, rest) = keys.split_at(KEY_LEN);
        let (mac_key, iv) = rest.split_at(KEY_LEN);
        if !same(&hmac_sha256(mac_key, &envelope.ciphertext), &envelope.hmac) {
            continue;
        }
        let padded = aes_256_ctr(aes, iv, &envelope.ciphertext);
        return unpad(padded);
    }
    Err(Failure::HmacMismatch)
}

fn parse(text: &str) -> Result<Envelope, Failure> {
    let mut lines = text.trim_start().lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .trim()
        .split(';')
        .map(str::trim)
        .collect();
    if header.first() != Some(&HEADER) || header.len() < 3 {
        return Err(Failure::Malformed("no $ANSIBLE_VAULT header"));
    }
    if !matches!(header[1], "1.1" | "1.2") {
        return Err(Failure::Malformed(
            "unknown format version (1.1 and 1.2 are known)",
        ));
    }
    if header[2] != "AES256" {
        return Err(Failure::Malformed("unknown cipher (AES256 is known)"));
    }
    let body: String = lines.flat_map(|l| l.split_whitespace()).collect();
    let inner = unhex(&body).ok_or(Failure::Malformed("the body is not hex"))?;
    let inner = String::from_utf8(inner).map_err(|_| Failure::Malformed("the body is not hex"))?;
    let mut parts = inner.splitn(3, '\n');
    let mut part = || {
        parts
            .next()
            .and_then(|p| unhex(p.trim()))
            .ok_or(Failure::Malformed(
                "salt, HMAC and ciphertext are not three hex lines",
            ))
    };
    let (salt, hmac, ciphertext) = (part()?, part()?, part()?);
    Ok(Envelope {
        vault_id: header.get(3).map(|s| s.to_string()),
        salt,
        hmac,
        ciphertext,
    })
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || !hex.is_ascii() {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

fn unpad(mut padded: Vec<u8>) -> Result<Vec<u8>, Failure> {
    let bad = Failure::Malformed("bad PKCS#7 padding");
    let n = usize::from(
        *padded
            .last()
            .ok_or(Failure::Malformed("empty ciphertext"))?,
    );
    if n == 0 || n > BLOCK || n > padded.len() {
        return Err(bad);
    }
    if !padded[padded.len() - n..]
        .iter()
        .all(|&b| usize::from(b) == n)
    {
        return Err(bad);
    }
    padded.truncate(padded.len() - n);
    Ok(padded)
}

/// The AES key, HMAC key and IV, in that order.
fn derive(password: &[u8], salt: &[u8]) -> [u8; 2 * KEY_LEN + IV_LEN] {
    let mut out = [0u8; 2 * KEY_LEN + IV_LEN];
    // SAFETY: every pointer is valid for the length passed with it.
    let ok = unsafe {
        openssl_sys::PKCS5_PBKDF2_HMAC(
            password.as_ptr().cast(),
            c_len(password.len()),
            salt.as_ptr(),
            c_len(salt.len()),
            ITERATIONS,
            openssl_sys::EVP_sha256(),
            c_len(out.len()),
            out.as_mut_ptr(),
        )
    };
    assert_eq!(ok, 1, "OpenSSL could not run PBKDF2");
    out
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut md = [0u8; 32];
    let mut len: c_uint = 0;
    // SAFETY: a fresh context, freed before returning; `md` holds a SHA-256
    // digest and each input is valid for its length.
    let ok = unsafe {
        let ctx = openssl_sys::HMAC_CTX_new();
        let ok = !ctx.is_null()
            && openssl_sys::HMAC_Init_ex(
                ctx,
                key.as_ptr().cast(),
                c_len(key.len()),
                openssl_sys::EVP_sha256(),
                std::ptr::null_mut(),
            ) == 1
            && openssl_sys::HMAC_Update(ctx, data.as_ptr(), data.len()) == 1
            && openssl_sys::HMAC_Final(ctx, md.as_mut_ptr(), &mut len) == 1;
        openssl_sys::HMAC_CTX_free(ctx);
        ok
    };
    assert!(ok, "OpenSSL could not compute an HMAC");
    md[..len as usize].to_vec()
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    // SAFETY: both are valid for the length compared.
    a.len() == b.len()
        && unsafe { openssl_sys::CRYPTO_memcmp(a.as_ptr().cast(), b.as_ptr().cast(), a.len()) == 0 }
}

/// CTR mode is its own inverse: this both encrypts and decrypts.
fn aes_256_ctr(key: &[u8], iv: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; data.len() + BLOCK];
    let (mut n, mut last) = (0 as c_int, 0 as c_int);
    // SAFETY: a fresh context, freed before returning; `out` has room for
    // the input and one block, more than a stream cipher writes.
    let ok = unsafe {
        let ctx = openssl_sys::EVP_CIPHER_CTX_new();
        let ok = !ctx.is_null()
            && openssl_sys::EVP_DecryptInit_ex(
                ctx,
                openssl_sys::EVP_aes_256_ctr(),
                std::ptr::null_mut(),
                key.as_ptr(),
                iv.as_ptr(),
            ) == 1
            && openssl_sys::EVP_DecryptUpdate(
                ctx,
                out.as_mut_ptr(),
                &mut n,
                data.as_ptr(),
                c_len(data.len()),
            ) == 1
            && openssl_sys::EVP_DecryptFinal_ex(ctx, out.as_mut_ptr().add(n as usize), &mut last)
                == 1;
        openssl_sys::EVP_CIPHER_CTX_free(ctx);
        ok
    };
    assert!(ok, "OpenSSL could not run AES-256-CTR");
    out.truncate((n + last) as usize);
    out
}

/// Input files are at most 64 MiB (base::input), well inside a C int.
fn c_len(n: usize) -> c_int {
    c_int::try_from(n).expect("vault data fits a C int")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by ansible-vault 2.17: `encrypt --vault-password-file` (a
    /// file holding `hunter2-pass`) and `encrypt --vault-id prod@...`
    /// (`prod-pass`).
    const V11: &str = "$ANSIBLE_VAULT;1.1;AES256\n62376637656461373636363663363338303832363639656238366366643730623435316165643235\n6136343232346639613537393233336461663737343631300a653962396166363862643535623064\n39633837333565626137616463613732316536643432313462323833623737373438393532326637\n6464393436383331310a666336633838316538316263326130643334333431656436626264366334\n35623662383461396236613737636232653265623432353438326364623365373636\n";
    const V12: &str = "$ANSIBLE_VAULT;1.2;AES256;prod\n65333565323361363535663665326631653061323565343263383664336233353237306264643834\n3233376335613634353934646138393330653339333066320a656130626531393433656335363430\n38306364633537623561646238666664353134326262393335663965363331666162306134393461\n3939373631663738630a386661396238653535393834343738373731306464326137343662666437\n34313161353730326565663836376430343435313838633030326464653665623334\n";

    fn secret(label: &str, password: &str) -> VaultSecret {
        VaultSecret::new(label, password.as_bytes().to_vec())
    }

    #[test]
    fn ansible_vault_ciphertexts_decrypt() {
        let plain = decrypt(V11, &[secret("default", "hunter2-pass")]).unwrap();
        assert_eq!(plain, b"db_password: s3cr3t-v11\n");
        assert_eq!(vault_id(V12), "prod");
        // The labelled secret is tried first, the others after it.
        let keys = [secret("dev", "hunter2-pass"), secret("x", "prod-pass")];
        assert_eq!(decrypt(V12, &keys).unwrap(), b"db_password: s3cr3t-v12\n");
        let keys = [secret("dev", "hunter2-pass"), secret("prod", "prod-pass")];
        assert_eq!(decrypt(V12, &keys).unwrap(), b"db_password: s3cr3t-v12\n");
    }

    #[test]
    fn a_wrong_or_missing_password_is_refused() {
        assert_eq!(
            decrypt(V11, &[secret("default", "wrong")]),
            Err(Failure::HmacMismatch)
        );
        assert_eq!(decrypt(V11, &[]), Err(Failure::NoPassword));
    }

    #[test]
    fn a_tampered_hmac_or_ciphertext_is_refused() {
        let envelope = parse(V11).unwrap();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let seal = |salt: &[u8], mac: &[u8], ct: &[u8]| {
            let inner = format!("{}\n{}\n{}", hex(salt), hex(mac), hex(ct));
            format!("$ANSIBLE_VAULT;1.1;AES256\n{}\n", hex(inner.as_bytes()))
        };
        let key = [secret("default", "hunter2-pass")];
        let (s, m, c) = (&envelope.salt, &envelope.hmac, &envelope.ciphertext);
        assert!(decrypt(&seal(s, m, c), &key).is_ok());
        let mut mac = m.clone();
        mac[0] ^= 1;
        assert_eq!(decrypt(&seal(s, &mac, c), &key), Err(Failure::HmacMismatch));
        let mut ct = c.clone();
        ct[3] ^= 0x80;
        assert_eq!(decrypt(&seal(s, m, &ct), &key), Err(Failure::HmacMismatch));
        assert!(matches!(
            decrypt("$ANSIBLE_VAULT;1.1;AES256\nzz\n", &key),
            Err(Failure::Malformed(_))
        ));
    }

    #[test]
    fn hmac_and_ctr_match_published_vectors() {
        // RFC 4231 test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // NIST SP 800-38A F.5.5, first block.
        let key =
            unhex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4").unwrap();
        let iv = unhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff").unwrap();
        let plain = unhex("6bc1bee22e409f96e93d7e117393172a").unwrap();
        let out = aes_256_ctr(&key, &iv, &plain);
        assert_eq!(out, unhex("601ec313775789a5b7a7f504bbf3d228").unwrap());
    }

    #[test]
    fn padding_is_checked() {
        assert_eq!(unpad(b"ab\x02\x02".to_vec()), Ok(b"ab".to_vec()));
        assert!(unpad(b"ab\x01\x02".to_vec()).is_err());
        assert!(unpad(b"ab\x00".to_vec()).is_err());
    }
}
