//! Where vault passwords come from: files, scripts and the terminal, named
//! as Ansible names them (`--vault-id label@source`, `--vault-password-file`,
//! `--ask-vault-pass`, `ANSIBLE_VAULT_IDENTITY_LIST`,
//! `ANSIBLE_VAULT_PASSWORD_FILE`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::format::VaultSecret;

/// The label of a password given without one, as Ansible's `default`.
pub const DEFAULT_LABEL: &str = "default";

/// One place a password is read from, with the vault id it is for.
#[derive(Clone, Debug, PartialEq)]
pub struct SecretSource {
    pub label: String,
    pub from: Origin,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// A file holding the password, or a script that prints it.
    File(PathBuf),
    /// Asked on the terminal, without echo.
    Prompt,
}

#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("vault password file {path}: {problem}")]
    File { path: String, problem: String },
    #[error("vault password script {path}: {problem}")]
    Script { path: String, problem: String },
    #[error("cannot ask for the vault password on the terminal: {0}")]
    Terminal(std::io::Error),
    #[error("the vault password for vault id '{0}' is empty")]
    Empty(String),
}

impl SecretSource {
    /// `label@source` as `--vault-id` takes it; a bare `source` is for the
    /// default vault id. `prompt` asks on the terminal.
    pub fn parse(spec: &str) -> SecretSource {
        let (label, source) = spec.split_once('@').unwrap_or((DEFAULT_LABEL, spec));
        let from = match source {
            "prompt" | "prompt_ask_vault_pass" => Origin::Prompt,
            path => Origin::File(PathBuf::from(path)),
        };
        SecretSource {
            label: label.to_string(),
            from,
        }
    }

    fn file(path: PathBuf) -> SecretSource {
        SecretSource {
            label: DEFAULT_LABEL.into(),
            from: Origin::File(path),
        }
    }
}

/// What the command line and the settings give.
#[derive(Debug, Default)]
pub struct Given<'a> {
    /// `vault_identity_list` (ansible.cfg, `ANSIBLE_VAULT_IDENTITY_LIST`).
    pub identity_list: &'a [String],
    pub vault_ids: &'a [String],
    pub password_files: &'a [PathBuf],
    /// `vault_password_file` (ansible.cfg, `ANSIBLE_VAULT_PASSWORD_FILE`).
    pub settings_password_file: Option<&'a Path>,
    pub ask: bool,
}

/// The sources in Ansible's order: the identity list, `--vault-id`s,
/// password files (the command line's, then the settings'), then the
/// `--ask-vault-pass` prompt.
pub fn sources(given: &Given) -> Vec<SecretSource> {
    let mut out: Vec<SecretSource> = given
        .identity_list
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(SecretSource::parse)
        .collect();
    out.extend(given.vault_ids.iter().map(|s| SecretSource::parse(s)));
    out.extend(given.password_files.iter().cloned().map(SecretSource::file));
    if let Some(file) = given.settings_password_file {
        out.push(SecretSource::file(file.to_path_buf()));
    }
    if given.ask {
        out.push(SecretSource {
            label: DEFAULT_LABEL.into(),
            from: Origin::Prompt,
        });
    }
    out.dedup();
    out
}

/// Reads every source once, in order: files are read, scripts run, prompts
/// asked. A source that gives nothing is an error, as in Ansible.
pub fn resolve(sources: &[SecretSource]) -> Result<Vec<VaultSecret>, PasswordError> {
    sources
        .iter()
        .map(|s| {
            let password = match &s.from {
                Origin::File(path) => from_file(path, &s.label)?,
                Origin::Prompt => prompt(&s.label)?,
            };
            if password.is_empty() {
                return Err(PasswordError::Empty(s.label.clone()));
            }
            Ok(VaultSecret::new(s.label.clone(), password))
        })
        .collect()
}

fn prompt(label: &str) -> Result<Vec<u8>, PasswordError> {
    let text = match label {
        DEFAULT_LABEL => "Vault password: ".to_string(),
        _ => format!("Vault password ({label}): "),
    };
    let secret = crate::remote::connect::read_tty_secret(&text).map_err(PasswordError::Terminal)?;
    Ok(secret.expose().as_bytes().to_vec())
}

/// A file's content, or an executable's output, stripped as Ansible strips
/// them: all surrounding whitespace of a file, the line breaks of a script.
fn from_file(path: &Path, label: &str) -> Result<Vec<u8>, PasswordError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| PasswordError::File {
        path: name.clone(),
        problem: e.to_string(),
    })?;
    if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
        return run_script(path, label);
    }
    let text = crate::base::input::read_text(path).map_err(|e| PasswordError::File {
        path: name,
        problem: e.reason(),
    })?;
    Ok(text.trim_matches(is_py_space).as_bytes().to_vec())
}

/// What Python's `bytes.strip()` strips.
fn is_py_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// Runs a password script; one named `*-client` is told the vault id it is
/// asked for (`--vault-id label`), as Ansible tells it.
fn run_script(path: &Path, label: &str) -> Result<Vec<u8>, PasswordError> {
    let fail = |problem: String| PasswordError::Script {
        path: path.display().to_string(),
        problem,
    };
    // A bare name is the file in the working folder, as Ansible finds it,
    // not a program looked up on PATH.
    let mut cmd = Command::new(Path::new(".").join(path));
    // A password script needs the vault id at most, never nodeprov's own
    // passwords.
    crate::base::child_env::without_own_settings(&mut cmd);
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    if stem.ends_with("-client") {
        cmd.args(["--vault-id", label]);
    }
    let out = cmd
        .stdin(Stdio::inherit())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(format!("exited with {}", out.status)));
    }
    let mut password = out.stdout;
    while password.last().is_some_and(|b| matches!(b, b'\r' | b'\n')) {
        password.pop();
    }
    let lead = password
        .iter()
        .take_while(|b| matches!(b, b'\r' | b'\n'))
        .count();
    password.drain(..lead);
    Ok(password)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_come_in_ansibles_order() {
        let list = ["prod@/p".to_string(), "dev@prompt".to_string()];
        let ids = ["ops@/o".to_string(), "/bare".to_string()];
        let files = [PathBuf::from("/f")];
        let given = Given {
            identity_list: &list,
            vault_ids: &ids,
            password_files: &files,
            settings_password_file: Some(Path::new("/env")),
            ask: true,
        };
        let got: Vec<(String, Origin)> = sources(&given)
            .into_iter()
            .map(|s| (s.label, s.from))
            .collect();
        let file = |p: &str| Origin::File(PathBuf::from(p));
        let want = vec![
            ("prod".to_string(), file("/p")),
            ("dev".to_string(), Origin::Prompt),
            ("ops".to_string(), file("/o")),
            ("default".to_string(), file("/bare")),
            ("default".to_string(), file("/f")),
            ("default".to_string(), file("/env")),
            ("default".to_string(), Origin::Prompt),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn a_file_is_stripped_and_a_script_is_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pass");
        std::fs::write(&file, "  s3cret \n\n").unwrap();
        let script = dir.path().join("pass-client");
        std::fs::write(&script, "#!/bin/sh\necho \"from-$2\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sources = [
            SecretSource::parse(&format!("a@{}", file.display())),
            SecretSource::parse(&format!("b@{}", script.display())),
        ];
        let got = resolve(&sources).unwrap();
        assert_eq!(
            format!("{got:?}"),
            "[VaultSecret(a, ********), VaultSecret(b, ********)]"
        );
        let plain: Vec<&[u8]> = got.iter().map(VaultSecret::password).collect();
        assert_eq!(plain, [&b"s3cret"[..], &b"from-b"[..]]);
    }

    #[test]
    fn an_empty_or_missing_password_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, " \n").unwrap();
        let err = resolve(&[SecretSource::parse(&empty.display().to_string())]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the vault password for vault id 'default' is empty"
        );
        let missing = dir.path().join("none");
        let err = resolve(&[SecretSource::parse(&missing.display().to_string())]).unwrap_err();
        assert!(err.to_string().starts_with("vault password file "), "{err}");
    }
}
