//! `ansible.cfg` and the `ANSIBLE_*` environment: found as Ansible finds
//! the file (first hit wins, no merging), read as Python's configparser
//! reads it, and resolved once into [`Settings`]. Command-line flags are
//! applied on top of these by the commands.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CfgError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {problem}")]
    Syntax {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("{origin}: {key} = '{value}' is not {expected}")]
    Value {
        origin: String,
        key: String,
        value: String,
        expected: &'static str,
    },
}

/// How a key's text becomes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Bool,
    Number,
    /// A path, relative to the cfg file's folder.
    Path,
    /// `:`-separated paths (Ansible's `pathspec`).
    PathSpec,
    /// `,`-separated paths (Ansible's `pathlist`).
    PathList,
    /// `,`-separated words.
    List,
    /// Read and accepted, with nothing to do: the reason says why.
    NoOp(&'static str),
}

/// One key nodeprov reads: where it sits in the file, the environment
/// variables that override it (first set wins), and what it sets.
#[derive(Debug)]
pub struct Key {
    pub section: &'static str,
    pub name: &'static str,
    pub env: &'static [&'static str],
    pub kind: Kind,
    pub meaning: &'static str,
}

const fn key(
    section: &'static str,
    name: &'static str,
    env: &'static [&'static str],
    kind: Kind,
    meaning: &'static str,
) -> Key {
    Key {
        section,
        name,
        env,
        kind,
        meaning,
    }
}

/// Every key nodeprov honours; anything else in the file is warned about.
pub const KEYS: &[Key] = &[
    key(
        "defaults",
        "inventory",
        &["ANSIBLE_INVENTORY"],
        Kind::PathList,
        "inventory sources when no `-i` is given",
    ),
    key(
        "defaults",
        "roles_path",
        &["ANSIBLE_ROLES_PATH"],
        Kind::PathSpec,
        "role folders, after `--roles-path`",
    ),
    key(
        "defaults",
        "library",
        &["ANSIBLE_LIBRARY"],
        Kind::PathSpec,
        "module folders; read by ansible-core itself when a task runs Ansible's module",
    ),
    key(
        "defaults",
        "collections_path",
        &["ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"],
        Kind::PathSpec,
        "collection folders [default: `~/.ansible/collections:/usr/share/ansible/collections`]",
    ),
    key(
        "defaults",
        "collections_paths",
        &[],
        Kind::PathSpec,
        "older name of `collections_path`",
    ),
    key(
        "defaults",
        "remote_user",
        &["ANSIBLE_REMOTE_USER"],
        Kind::Text,
        "login user (`-u`)",
    ),
    key(
        "defaults",
        "private_key_file",
        &["ANSIBLE_PRIVATE_KEY_FILE"],
        Kind::Path,
        "SSH key (`--private-key`)",
    ),
    key(
        "defaults",
        "ansible_managed",
        &[],
        Kind::Text,
        "what `{{ ansible_managed }}` says in a template (`{file}`, `{host}`, `{uid}` and the file's time, strftime's `%Y`…, filled in)",
    ),
    key(
        "defaults",
        "forks",
        &["ANSIBLE_FORKS"],
        Kind::Number,
        "hosts in parallel (`-f`)",
    ),
    key(
        "defaults",
        "timeout",
        &["ANSIBLE_TIMEOUT"],
        Kind::Number,
        "SSH connect timeout in seconds (`-T`)",
    ),
    key(
        "defaults",
        "gathering",
        &["ANSIBLE_GATHERING"],
        Kind::Text,
        "`explicit`: plays without `gather_facts` gather none",
    ),
    key(
        "defaults",
        "host_key_checking",
        &["ANSIBLE_HOST_KEY_CHECKING"],
        Kind::Bool,
        "`False` records unknown host keys (accept-new); changed keys are still refused",
    ),
    key(
        "defaults",
        "retry_files_enabled",
        &["ANSIBLE_RETRY_FILES_ENABLED"],
        Kind::Bool,
        "whether a `.retry` file is written",
    ),
    key(
        "defaults",
        "retry_files_save_path",
        &["ANSIBLE_RETRY_FILES_SAVE_PATH"],
        Kind::Path,
        "folder for `.retry` files",
    ),
    key(
        "defaults",
        "vault_password_file",
        &["ANSIBLE_VAULT_PASSWORD_FILE"],
        Kind::Path,
        "vault password file",
    ),
    key(
        "defaults",
        "vault_identity_list",
        &["ANSIBLE_VAULT_IDENTITY_LIST"],
        Kind::List,
        "vault identities (`id@source`)",
    ),
    key(
        "privilege_escalation",
        "become",
        &["ANSIBLE_BECOME"],
        Kind::Bool,
        "plays without `become` escalate",
    ),
    key(
        "privilege_escalation",
        "become_user",
        &["ANSIBLE_BECOME_USER"],
        Kind::Text,
        "user plays escalate to",
    ),
    key(
        "privilege_escalation",
        "become_method",
        &["ANSIBLE_BECOME_METHOD"],
        Kind::Text,
        "only `sudo` is supported",
    ),
    key(
        "privilege_escalation",
        "become_flags",
        &["ANSIBLE_BECOME_FLAGS"],
        Kind::Text,
        "sudo's options for plays that give none (`-S` always added, `-n` left out)",
    ),
    key(
        "privilege_escalation",
        "become_ask_pass",
        &["ANSIBLE_BECOME_ASK_PASS"],
        Kind::Bool,
        "prompt for the sudo password (`-K`)",
    ),
    key(
        "ssh_connection",
        "ssh_args",
        &["ANSIBLE_SSH_ARGS"],
        Kind::Text,
        "`-o Option=value` words, read as ssh_config lines before ~/.ssh/config",
    ),
    key(
        "ssh_connection",
        "pipelining",
        &["ANSIBLE_PIPELINING", "ANSIBLE_SSH_PIPELINING"],
        Kind::NoOp("nodeprov always pipelines"),
        "",
    ),
    key(
        "ssh_connection",
        "control_path",
        &["ANSIBLE_SSH_CONTROL_PATH"],
        Kind::NoOp("one libssh2 session per host needs no control socket"),
        "",
    ),
    key(
        "ssh_connection",
        "control_path_dir",
        &["ANSIBLE_SSH_CONTROL_PATH_DIR"],
        Kind::NoOp("one libssh2 session per host needs no control socket"),
        "",
    ),
    key(
        "ssh_connection",
        "control_master",
        &[],
        Kind::NoOp("one libssh2 session per host needs no control socket"),
        "",
    ),
    key(
        "inventory",
        "enable_plugins",
        &["ANSIBLE_INVENTORY_ENABLED"],
        Kind::List,
        "`advanced_host_list` expands ranges in `-i 'a[1:3],'`",
    ),
];

/// Where `ansible.cfg` is looked for, in order; injectable so that tests
/// never need the machine's own `/etc`.
#[derive(Clone, Debug)]
pub struct Search {
    /// `ANSIBLE_CONFIG`: a file, or a folder holding `ansible.cfg`.
    pub env_config: Option<PathBuf>,
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub system: PathBuf,
}

impl Search {
    pub fn new(env: &Env, cwd: PathBuf) -> Search {
        Search {
            env_config: env
                .get("ANSIBLE_CONFIG")
                .map(|p| expand_home(p, env.home())),
            cwd,
            home: env.home().map(Path::to_path_buf),
            system: PathBuf::from("/etc/ansible/ansible.cfg"),
        }
    }

    /// The file to read, and warnings about candidates skipped.
    fn find(&self) -> (Option<PathBuf>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut candidates = Vec::new();
        if let Some(p) = &self.env_config {
            candidates.push(if p.is_dir() {
                p.join("ansible.cfg")
            } else {
                p.clone()
            });
        }
        let local = self.cwd.join("ansible.cfg");
        if world_writable(&self.cwd) {
            if local.exists() {
                // Ansible's own words: anyone could have planted it.
                warnings.push(format!(
                    "Ansible is being run in a world writable directory ({}), ignoring it as an ansible.cfg source.",
                    self.cwd.display()
                ));
            }
        } else {
            candidates.push(local);
        }
        candidates.extend(self.home.as_ref().map(|h| h.join(".ansible.cfg")));
        candidates.push(self.system.clone());
        (candidates.into_iter().find(|p| p.is_file()), warnings)
    }
}

fn world_writable(dir: &Path) -> bool {
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o002 != 0)
}

/// The process environment, read once; only `ANSIBLE_*` and `HOME` matter.
#[derive(Clone, Debug, Default)]
pub struct Env(BTreeMap<String, String>);

impl Env {
    pub fn from_process() -> Env {
        Env::from_pairs(std::env::vars())
    }

    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Env {
        Env(pairs
            .into_iter()
            .filter(|(k, _)| k.starts_with("ANSIBLE_") || k == "HOME")
            .collect())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    fn home(&self) -> Option<&Path> {
        self.get("HOME").map(Path::new)
    }
}

/// `gathering`: whether plays that do not say gather facts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gathering {
    Implicit,
    Explicit,
}

/// Everything ansible.cfg and the environment say, resolved.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The file read, if any.
    pub file: Option<PathBuf>,
    pub inventory: Vec<String>,
    pub roles_path: Vec<PathBuf>,
    /// For collection lookup: `collections_path` (or its older plural),
    /// else Ansible's default `~/.ansible/collections:/usr/share/ansible/collections`.
    pub collections_path: Vec<PathBuf>,
    pub remote_user: Option<String>,
    pub private_key_file: Option<PathBuf>,
    pub forks: Option<usize>,
    pub timeout: Option<u64>,
    pub gathering: Gathering,
    pub host_key_checking: bool,
    pub retry_files_enabled: bool,
    pub retry_files_save_path: Option<PathBuf>,
    /// Password sources for vault decryption, in Ansible's order:
    /// `vault_identity_list` entries (`id@source`), then the password file.
    pub vault_password_file: Option<PathBuf>,
    pub vault_identity_list: Vec<String>,
    /// `become`.
    pub escalate: bool,
    pub become_user: Option<String>,
    pub become_method: Option<String>,
    pub become_flags: Option<String>,
    pub ansible_managed: Option<String>,
    pub become_ask_pass: bool,
    /// `ssh_args` as ssh_config lines (`-o Key=value` → `Key value`).
    pub ssh_config_lines: Vec<String>,
    pub enable_plugins: Vec<String>,
    /// One line per key nodeprov does not use, or file skipped.
    pub warnings: Vec<String>,
}

/// The cfg file's entries: `(section, key)` → (value, line).
type Entries = BTreeMap<(String, String), (String, usize)>;

/// Finds and reads the cfg file, then resolves every key of [`KEYS`] with
/// the environment winning over the file.
pub fn resolve(search: &Search, env: &Env) -> Result<Settings, CfgError> {
    let (file, mut warnings) = search.find();
    let entries = match &file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| CfgError::Read {
                path: path.display().to_string(),
                source,
            })?;
            parse(&text, &path.display().to_string())?
        }
        None => Entries::new(),
    };
    let name = file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    for (section, key) in entries.keys() {
        if !KEYS.iter().any(|k| k.section == section && k.name == key) {
            warnings.push(format!(
                "{name}: [{section}] {key} is not used by nodeprov; ignored"
            ));
        }
    }
    let base = file
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| search.cwd.clone(), Path::to_path_buf);
    let r = Resolver {
        entries: &entries,
        env,
        file: &name,
        cfg_dir: &base,
        cwd: &search.cwd,
    };
    let mut collections = match r.paths("collections_path")? {
        p if p.is_empty() => r.paths("collections_paths")?,
        p => p,
    };
    if collections.is_empty() {
        // Ansible's default, so that users of the list need not know it.
        collections.extend(env.home().map(|h| h.join(".ansible/collections")));
        collections.push(PathBuf::from("/usr/share/ansible/collections"));
    }
    let gathering = match r.text("gathering").as_deref() {
        Some("explicit") => Gathering::Explicit,
        _ => Gathering::Implicit,
    };
    Ok(Settings {
        inventory: r
            .paths("inventory")?
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        roles_path: r.paths("roles_path")?,
        collections_path: collections,
        remote_user: r.text("remote_user"),
        private_key_file: r.path("private_key_file"),
        forks: r.number("forks")?.map(|n| n as usize),
        timeout: r.number("timeout")?,
        gathering,
        host_key_checking: r.boolean("host_key_checking")?.unwrap_or(true),
        retry_files_enabled: r.boolean("retry_files_enabled")?.unwrap_or(true),
        retry_files_save_path: r.path("retry_files_save_path"),
        vault_password_file: r.path("vault_password_file"),
        vault_identity_list: r.list("vault_identity_list"),
        escalate: r.boolean("become")?.unwrap_or(false),
        become_user: r.text("become_user"),
        become_method: r.become_method()?,
        become_flags: r.text("become_flags"),
        ansible_managed: r.text("ansible_managed"),
        become_ask_pass: r.boolean("become_ask_pass")?.unwrap_or(false),
        ssh_config_lines: ssh_config_lines(&r.text("ssh_args").unwrap_or_default(), &mut warnings),
        enable_plugins: r.list("enable_plugins"),
        file,
        warnings,
    })
}

/// Where a value came from: relative paths in the file are relative to its
/// folder, in the environment to the current directory.
#[derive(Clone, Copy, Debug)]
enum Origin {
    File,
    Env,
}

struct Resolver<'a> {
    entries: &'a Entries,
    env: &'a Env,
    file: &'a str,
    cfg_dir: &'a Path,
    cwd: &'a Path,
}

impl Resolver<'_> {
    fn spec(name: &str) -> &'static Key {
        KEYS.iter()
            .find(|k| k.name == name)
            .expect("a declared key")
    }

    fn raw(&self, name: &str) -> Option<(String, Origin)> {
        let spec = Resolver::spec(name);
        if let Some(v) = spec.env.iter().find_map(|e| self.env.get(e)) {
            return Some((v.to_string(), Origin::Env));
        }
        self.entries
            .get(&(spec.section.to_string(), spec.name.to_string()))
            .map(|(v, _)| (v.clone(), Origin::File))
    }

    fn origin_name(&self, name: &str, origin: Origin) -> String {
        let spec = Resolver::spec(name);
        match origin {
            Origin::Env => spec
                .env
                .iter()
                .find(|e| self.env.get(e).is_some())
                .map_or_else(String::new, |e| e.to_string()),
            Origin::File => {
                let line = self
                    .entries
                    .get(&(spec.section.to_string(), spec.name.to_string()))
                    .map_or(0, |(_, l)| *l);
                format!("{}:{line} [{}]", self.file, spec.section)
            }
        }
    }

    fn text(&self, name: &str) -> Option<String> {
        self.raw(name).map(|(v, _)| v).filter(|v| !v.is_empty())
    }

    fn list(&self, name: &str) -> Vec<String> {
        self.raw(name)
            .map(|(v, _)| split(&v, ',').map(String::from).collect())
            .unwrap_or_default()
    }

    fn base(&self, origin: Origin) -> &Path {
        match origin {
            Origin::File => self.cfg_dir,
            Origin::Env => self.cwd,
        }
    }

    fn path_text(&self, text: &str, origin: Origin) -> PathBuf {
        self.base(origin).join(expand_home(text, self.env.home()))
    }

    fn path(&self, name: &str) -> Option<PathBuf> {
        let (v, origin) = self.raw(name)?;
        (!v.is_empty()).then(|| self.path_text(&v, origin))
    }

    fn paths(&self, name: &str) -> Result<Vec<PathBuf>, CfgError> {
        let Some((v, origin)) = self.raw(name) else {
            return Ok(Vec::new());
        };
        let sep = match Resolver::spec(name).kind {
            Kind::PathList => ',',
            _ => ':',
        };
        Ok(split(&v, sep).map(|p| self.path_text(p, origin)).collect())
    }

    fn invalid(&self, name: &str, origin: Origin, value: &str, expected: &'static str) -> CfgError {
        CfgError::Value {
            origin: self.origin_name(name, origin),
            key: name.to_string(),
            value: value.to_string(),
            expected,
        }
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, CfgError> {
        let Some((v, origin)) = self.raw(name) else {
            return Ok(None);
        };
        parse_bool(&v).map(Some).ok_or_else(|| {
            self.invalid(
                name,
                origin,
                &v,
                "a boolean (true/false, yes/no, on/off, 1/0)",
            )
        })
    }

    /// Only sudo escalates here, so another method is refused rather than
    /// quietly replaced.
    fn become_method(&self) -> Result<Option<String>, CfgError> {
        match self.raw("become_method") {
            Some((v, origin)) if !crate::base::escalation::is_sudo(&v) => Err(self.invalid(
                "become_method",
                origin,
                &v,
                "sudo, the one method nodeprov escalates with",
            )),
            found => Ok(found.map(|(v, _)| v.trim().to_string())),
        }
    }

    fn number(&self, name: &str) -> Result<Option<u64>, CfgError> {
        let Some((v, origin)) = self.raw(name) else {
            return Ok(None);
        };
        v.trim()
            .parse()
            .map(Some)
            .map_err(|_| self.invalid(name, origin, &v, "a whole number"))
    }
}

/// The `-o` options of `ssh_args` as ssh_config lines; `-C` is accepted
/// (libssh2 negotiates compression itself), other flags warn.
fn ssh_config_lines(args: &str, warnings: &mut Vec<String>) -> Vec<String> {
    let mut lines = Vec::new();
    let mut words = args.split_whitespace();
    while let Some(word) = words.next() {
        let option = match word.strip_prefix("-o") {
            Some("") => words.next(),
            Some(inline) => Some(inline),
            None if word == "-C" => continue,
            None => {
                warnings.push(format!(
                    "ssh_args: '{word}' has no nodeprov equivalent; ignored"
                ));
                continue;
            }
        };
        if let Some(option) = option {
            lines.push(option.replacen('=', " ", 1));
        }
    }
    lines
}

/// Ansible's `boolean()`: these words, in any case.
fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" | "on" | "1" | "true" | "t" => Some(true),
        "n" | "no" | "off" | "0" | "false" | "f" | "" => Some(false),
        _ => None,
    }
}

fn split(text: &str, sep: char) -> impl Iterator<Item = &str> {
    text.split(sep).map(str::trim).filter(|s| !s.is_empty())
}

fn expand_home(text: &str, home: Option<&Path>) -> PathBuf {
    match (text.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(text),
    }
}

/// The file as Ansible's `ConfigParser(inline_comment_prefixes=(';',))`
/// reads it: `[section]` headers, `key = value` or `key: value` (keys
/// lower-cased), whole-line `#`/`;` comments, ` ;` comments after a value,
/// indented lines continuing the value above, duplicates refused.
fn parse(text: &str, path: &str) -> Result<Entries, CfgError> {
    let fail = |line: usize, problem: String| CfgError::Syntax {
        path: path.to_string(),
        line,
        problem,
    };
    let mut entries = Entries::new();
    let mut section: Option<String> = None;
    let mut last: Option<(String, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = raw.trim();
        if trimmed.starts_with(['#', ';']) {
            continue;
        }
        if trimmed.is_empty() {
            last = None;
            continue;
        }
        let value_part = strip_inline_comment(trimmed);
        if raw.starts_with([' ', '\t']) {
            if let Some(at) = &last {
                let entry = entries.get_mut(at).expect("the entry continued");
                if !entry.0.is_empty() {
                    entry.0.push('\n');
                }
                entry.0.push_str(value_part);
                continue;
            }
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = Some(name.to_string());
            last = None;
            continue;
        }
        let Some(current) = &section else {
            return Err(fail(n, "a key before any [section] header".into()));
        };
        let Some(at) = value_part.find(['=', ':']) else {
            return Err(fail(
                n,
                format!("expected `key = value`, found '{trimmed}'"),
            ));
        };
        let key = value_part[..at].trim().to_lowercase();
        let value = value_part[at + 1..].trim().to_string();
        let slot = (current.clone(), key.clone());
        if entries.contains_key(&slot) {
            return Err(fail(n, format!("[{current}] {key} is set twice")));
        }
        entries.insert(slot.clone(), (value, n));
        last = Some(slot);
    }
    Ok(entries)
}

/// configparser's inline comments: a `;` preceded by whitespace.
fn strip_inline_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let cut = (1..bytes.len()).find(|&i| bytes[i] == b';' && bytes[i - 1].is_ascii_whitespace());
    cut.map_or(line, |i| line[..i].trim_end())
}

/// The README's table of honoured keys, generated from [`KEYS`].
pub fn keys_markdown() -> String {
    let mut out = String::from("| section | key | environment | effect |\n|---|---|---|---|\n");
    for k in KEYS {
        let env = k
            .env
            .iter()
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let effect = match k.kind {
            Kind::NoOp(why) => format!("accepted, no effect: {why}"),
            _ => k.meaning.to_string(),
        };
        out.push_str(&format!(
            "| {} | `{}` | {env} | {effect} |\n",
            k.section, k.name
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(
        cfg: &str,
        env: &[(&str, &str)],
    ) -> (tempfile::TempDir, Result<Settings, CfgError>) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("project/ansible.cfg");
        std::fs::create_dir(dir.path().join("project")).unwrap();
        std::fs::write(&file, cfg).unwrap();
        let mut pairs: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        pairs.push(("HOME".into(), "/home/me".into()));
        pairs.push(("ANSIBLE_CONFIG".into(), file.display().to_string()));
        let env = Env::from_pairs(pairs);
        let search = Search {
            system: dir.path().join("etc-ansible.cfg"),
            ..Search::new(&env, dir.path().to_path_buf())
        };
        let s = resolve(&search, &env);
        (dir, s)
    }

    #[test]
    fn configparser_syntax_comments_continuations_and_key_case() {
        let text = "# top\n[defaults]\nRemote_User: deploy ; inline\nroles_path = a\n  b\n; gone\n[ssh_connection]\nssh_args=-o A=1;no-comment\n";
        let e = parse(text, "c").unwrap();
        let get = |s: &str, k: &str| e[&(s.to_string(), k.to_string())].0.clone();
        assert_eq!(get("defaults", "remote_user"), "deploy");
        assert_eq!(get("defaults", "roles_path"), "a\nb");
        assert_eq!(get("ssh_connection", "ssh_args"), "-o A=1;no-comment");
    }

    #[test]
    fn malformed_files_name_their_line() {
        let msg = |t: &str| parse(t, "a.cfg").unwrap_err().to_string();
        assert_eq!(
            msg("forks = 5\n"),
            "a.cfg:1: a key before any [section] header"
        );
        assert_eq!(
            msg("[defaults]\nforks\n"),
            "a.cfg:2: expected `key = value`, found 'forks'"
        );
        assert_eq!(
            msg("[defaults]\nforks=1\nforks=2\n"),
            "a.cfg:3: [defaults] forks is set twice"
        );
    }

    #[test]
    fn paths_are_relative_to_the_file_and_env_wins() {
        let cfg = "[defaults]\ninventory = hosts.ini\nroles_path = roles:~/more:/abs\nremote_user = deploy\nforks = 7\n";
        let (dir, s) = settings(cfg, &[("ANSIBLE_REMOTE_USER", "ops")]);
        let s = s.unwrap();
        let project = dir.path().join("project");
        assert_eq!(
            s.inventory,
            [project.join("hosts.ini").display().to_string()]
        );
        assert_eq!(
            s.roles_path,
            [
                project.join("roles"),
                PathBuf::from("/home/me/more"),
                PathBuf::from("/abs")
            ]
        );
        assert_eq!(s.remote_user.as_deref(), Some("ops"));
        assert_eq!(s.forks, Some(7));
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn library_is_no_unknown_key_since_ansible_core_reads_it() {
        let (_dir, s) = settings("[defaults]\nlibrary = ./library\n", &[]);
        let w = s.unwrap().warnings;
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn unknown_keys_warn_with_file_section_and_key() {
        let (_dir, s) = settings(
            "[defaults]\nstdout_callback = yaml\n[colors]\nok = green\n",
            &[],
        );
        let w = s.unwrap().warnings;
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].ends_with("ansible.cfg: [colors] ok is not used by nodeprov; ignored"),
            "{w:?}"
        );
        assert!(w[1].ends_with("[defaults] stdout_callback is not used by nodeprov; ignored"));
    }

    #[test]
    fn a_bad_boolean_names_where_it_was_set() {
        let (_dir, s) = settings("[defaults]\nhost_key_checking = maybe\n", &[]);
        let msg = s.unwrap_err().to_string();
        assert!(msg.ends_with("ansible.cfg:2 [defaults]: host_key_checking = 'maybe' is not a boolean (true/false, yes/no, on/off, 1/0)"), "{msg}");
        let (_dir, s) = settings("", &[("ANSIBLE_FORKS", "many")]);
        assert_eq!(
            s.unwrap_err().to_string(),
            "ANSIBLE_FORKS: forks = 'many' is not a whole number"
        );
    }

    #[test]
    fn a_become_method_other_than_sudo_is_refused() {
        let (_dir, s) = settings("[privilege_escalation]\nbecome_method = su\n", &[]);
        let msg = s.unwrap_err().to_string();
        assert!(
            msg.ends_with(
                "become_method = 'su' is not sudo, the one method nodeprov escalates with"
            ),
            "{msg}"
        );
    }

    #[test]
    fn collections_and_vault_settings_resolve() {
        let cfg = "[defaults]\ncollections_paths = coll\nvault_password_file = ~/.vault\nvault_identity_list = dev@a.txt, prod@prompt\n";
        let (dir, s) = settings(cfg, &[]);
        let s = s.unwrap();
        assert_eq!(s.collections_path, [dir.path().join("project/coll")]);
        assert_eq!(
            s.vault_password_file,
            Some(PathBuf::from("/home/me/.vault"))
        );
        assert_eq!(s.vault_identity_list, ["dev@a.txt", "prod@prompt"]);
        let (_dir, s) = settings("", &[]);
        assert_eq!(
            s.unwrap().collections_path,
            [
                PathBuf::from("/home/me/.ansible/collections"),
                PathBuf::from("/usr/share/ansible/collections")
            ]
        );
        let (_dir, s) = settings(cfg, &[("ANSIBLE_COLLECTIONS_PATH", "/x:/y")]);
        assert_eq!(
            s.unwrap().collections_path,
            [PathBuf::from("/x"), PathBuf::from("/y")]
        );
    }

    #[test]
    fn a_world_writable_cwd_is_skipped_with_ansibles_warning() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ansible.cfg"), "[defaults]\nforks=3\n").unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let env = Env::from_pairs([("HOME".to_string(), "/nonexistent".to_string())]);
        let search = Search {
            system: dir.path().join("none"),
            ..Search::new(&env, dir.path().to_path_buf())
        };
        let s = resolve(&search, &env).unwrap();
        assert_eq!(s.file, None);
        assert_eq!(s.forks, None);
        assert!(
            s.warnings[0].contains("world writable directory"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn ssh_args_become_ssh_config_lines() {
        let mut w = Vec::new();
        let lines = ssh_config_lines("-C -o ControlMaster=auto -oConnectTimeout=5 -v", &mut w);
        assert_eq!(lines, ["ControlMaster auto", "ConnectTimeout 5"]);
        assert_eq!(w, ["ssh_args: '-v' has no nodeprov equivalent; ignored"]);
    }

    #[test]
    fn the_key_table_lists_every_key_once() {
        let table = keys_markdown();
        for k in KEYS {
            assert_eq!(
                table.matches(&format!("| `{}` |", k.name)).count(),
                1,
                "{}",
                k.name
            );
        }
    }
}
