//! The parts of OpenSSH's `ssh_config` that fleet users rely on: `Host`
//! blocks with globs and negation, first match wins per option (except
//! `IdentityFile`, which accumulates), as `ssh` does.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::{ConfigError, ValueError};
use crate::base::input::ReadError;

/// One hop of a `ProxyJump` chain: `[user@]host[:port]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JumpHost {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StrictHostKeys {
    /// Unknown hosts are refused (`yes`, `ask`: we never prompt mid-run).
    Yes,
    /// Unknown hosts are recorded; changed keys are still refused.
    AcceptNew,
    /// `no` or `off`: connect to anything. Not honoured; kept as written
    /// and where (`FILE:LINE`), so the refusal can point at it.
    Off { value: String, at: String },
}

/// The options that apply to one host after all matching blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostConfig {
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_files: Vec<String>,
    /// `Some(vec![])` is an explicit `ProxyJump none`.
    pub proxy_jump: Option<Vec<JumpHost>>,
    pub connect_timeout: Option<Duration>,
    pub strict_host_keys: Option<StrictHostKeys>,
    pub known_hosts_files: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default)]
pub struct SshConfig {
    blocks: Vec<Block>,
}

#[derive(Clone, Debug)]
struct Block {
    /// `None` for options before the first `Host` line, and for `Match`
    /// blocks, which we do not evaluate (they never match).
    patterns: Option<Vec<String>>,
    is_match: bool,
    /// Keyword, arguments and `FILE:LINE`.
    options: Vec<(String, Vec<String>, String)>,
}

impl SshConfig {
    /// Reads a config file; a missing file is an empty config, as for `ssh`.
    pub fn load(path: &Path) -> Result<SshConfig, ConfigError> {
        match crate::base::input::read_text(path) {
            Ok(text) => SshConfig::parse(&text, &path.display().to_string()),
            Err(ReadError::Io { source, .. }) if source.kind() == ErrorKind::NotFound => {
                Ok(SshConfig::default())
            }
            Err(e) => Err(ConfigError::Read(e)),
        }
    }

    pub fn parse(text: &str, origin: &str) -> Result<SshConfig, ConfigError> {
        let mut blocks = vec![Block {
            patterns: None,
            is_match: false,
            options: Vec::new(),
        }];
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let Some((keyword, args)) = split_line(raw) else {
                continue;
            };
            if args.is_empty() {
                return Err(ConfigError::NoValue {
                    origin: origin.to_string(),
                    line,
                    keyword,
                });
            }
            match keyword.as_str() {
                "host" => blocks.push(Block {
                    patterns: Some(args),
                    is_match: false,
                    options: Vec::new(),
                }),
                "match" => blocks.push(Block {
                    patterns: None,
                    is_match: true,
                    options: Vec::new(),
                }),
                _ => {
                    validate(&keyword, &args).map_err(|problem| ConfigError::BadValue {
                        origin: origin.to_string(),
                        line,
                        problem,
                    })?;
                    let block = blocks.last_mut().expect("there is always a block");
                    block
                        .options
                        .push((keyword, args, format!("{origin}:{line}")));
                }
            }
        }
        Ok(SshConfig { blocks })
    }

    /// Appends the blocks of a lower-priority file (the system-wide config).
    pub fn then(mut self, other: SshConfig) -> SshConfig {
        self.blocks.extend(other.blocks);
        self
    }

    /// The options for `host`, the name given on the command line (the
    /// alias, before `HostName` rewrites it).
    pub fn resolve(&self, host: &str) -> HostConfig {
        let mut cfg = HostConfig::default();
        for block in self.blocks.iter().filter(|b| b.matches(host)) {
            for (keyword, args, at) in &block.options {
                apply(&mut cfg, keyword, args, at);
            }
        }
        cfg
    }
}

impl Block {
    fn matches(&self, host: &str) -> bool {
        match &self.patterns {
            None => !self.is_match,
            Some(patterns) => host_matches(patterns, host),
        }
    }
}

/// A host matches when one positive pattern matches and no negated one does.
pub(super) fn host_matches(patterns: &[String], host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let mut matched = false;
    for p in patterns {
        let p = p.to_ascii_lowercase();
        match p.strip_prefix('!') {
            Some(neg) if glob(neg.as_bytes(), host.as_bytes()) => return false,
            Some(_) => {}
            None => matched |= glob(p.as_bytes(), host.as_bytes()),
        }
    }
    matched
}

/// `*` and `?` globbing, as `ssh_config` patterns use.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// Splits `Keyword value...` or `Keyword=value`; keywords are case-insensitive.
fn split_line(raw: &str) -> Option<(String, Vec<String>)> {
    let line = raw.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let end = line
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(line.len());
    let keyword = line[..end].to_ascii_lowercase();
    let rest = line[end..].trim_start();
    let rest = rest.strip_prefix('=').unwrap_or(rest);
    Some((keyword, crate::base::shell::split(rest)))
}

fn validate(keyword: &str, args: &[String]) -> Result<(), ValueError> {
    let value = &args[0];
    match keyword {
        "port" => parse_port(value).map(drop),
        "connecttimeout" => value
            .parse::<u64>()
            .map(drop)
            .map_err(|_| ValueError::Timeout(value.clone())),
        "proxyjump" => parse_jumps(value).map(drop),
        "stricthostkeychecking" => parse_strict(value, "").map(drop),
        _ => Ok(()),
    }
}

/// Records an option unless an earlier block already set it.
fn apply(cfg: &mut HostConfig, keyword: &str, args: &[String], at: &str) {
    let value = &args[0];
    match keyword {
        "hostname" => set_once(&mut cfg.hostname, || value.clone()),
        "user" => set_once(&mut cfg.user, || value.clone()),
        "port" => set_once(&mut cfg.port, || parse_port(value).expect("validated")),
        "identityfile" => cfg.identity_files.push(value.clone()),
        "proxyjump" => set_once(&mut cfg.proxy_jump, || {
            parse_jumps(value).expect("validated")
        }),
        "connecttimeout" => set_once(&mut cfg.connect_timeout, || {
            Duration::from_secs(value.parse().expect("validated"))
        }),
        "stricthostkeychecking" => set_once(&mut cfg.strict_host_keys, || {
            parse_strict(value, at).expect("validated")
        }),
        "userknownhostsfile" => set_once(&mut cfg.known_hosts_files, || args.to_vec()),
        _ => {}
    }
}

fn set_once<T>(slot: &mut Option<T>, value: impl FnOnce() -> T) {
    if slot.is_none() {
        *slot = Some(value());
    }
}

fn parse_port(value: &str) -> Result<u16, ValueError> {
    value
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| ValueError::Port(value.to_string()))
}

fn parse_strict(value: &str, at: &str) -> Result<StrictHostKeys, ValueError> {
    match value.to_ascii_lowercase().as_str() {
        "yes" | "ask" => Ok(StrictHostKeys::Yes),
        "accept-new" => Ok(StrictHostKeys::AcceptNew),
        "no" | "off" => Ok(StrictHostKeys::Off {
            value: value.to_string(),
            at: at.to_string(),
        }),
        _ => Err(ValueError::Strict(value.to_string())),
    }
}

/// Parses a `ProxyJump` value: `none`, or comma-separated
/// `[user@]host[:port]` / `ssh://[user@]host[:port]` hops.
pub fn parse_jumps(value: &str) -> Result<Vec<JumpHost>, ValueError> {
    if value.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    value.split(',').map(|hop| parse_jump(hop.trim())).collect()
}

fn parse_jump(hop: &str) -> Result<JumpHost, ValueError> {
    let bad = || ValueError::Jump(hop.to_string());
    let rest = hop.strip_prefix("ssh://").unwrap_or(hop);
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
        Some(_) => return Err(bad()),
        None => (None, rest),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => return Err(bad()),
        };
        (host, port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(parse_port(p)?)),
            None => (hostport, None),
        }
    };
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(bad());
    }
    Ok(JumpHost {
        user,
        host: host.to_string(),
        port,
    })
}

/// Values used to expand `~` and `%` tokens in paths such as `IdentityFile`.
pub struct Tokens<'a> {
    pub home: &'a Path,
    pub local_user: &'a str,
    pub host: &'a str,
    pub remote_user: &'a str,
    pub port: u16,
}

/// Expands a leading `~/` and the `%d %u %h %r %p %%` tokens.
pub fn expand_path(path: &str, t: &Tokens) -> PathBuf {
    let mut out = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str(&t.home.to_string_lossy()),
            Some('u') => out.push_str(t.local_user),
            Some('h') => out.push_str(t.host),
            Some('r') => out.push_str(t.remote_user),
            Some('p') => out.push_str(&t.port.to_string()),
            Some('%') => out.push('%'),
            Some(other) => out.extend(['%', other]),
            None => out.push('%'),
        }
    }
    match out.strip_prefix("~/") {
        Some(rest) => t.home.join(rest),
        None if out == "~" => t.home.to_path_buf(),
        None => PathBuf::from(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "
# global defaults come first in the file but only fill what is unset
ConnectTimeout 7

Host bastion
    HostName 10.0.0.254
    User jump

Host gpu-* !gpu-99
    User deploy
    Port=2222
    IdentityFile ~/.ssh/fleet_ed25519
    ProxyJump jump@bastion:2200

Host gpu-01 other
    User ignored-because-gpu-star-came-first
    HostName 10.0.0.1
    IdentityFile \"~/.ssh/second key\"

Match host gpu-01
    User never

Host *
    User fallback
    Port 22
    StrictHostKeyChecking accept-new
";

    fn cfg() -> SshConfig {
        SshConfig::parse(CONFIG, "test").unwrap()
    }

    #[test]
    fn first_match_wins_per_option_and_identity_files_accumulate() {
        let c = cfg().resolve("gpu-01");
        assert_eq!(c.user.as_deref(), Some("deploy"));
        assert_eq!(c.port, Some(2222));
        assert_eq!(c.hostname.as_deref(), Some("10.0.0.1"));
        assert_eq!(
            c.identity_files,
            ["~/.ssh/fleet_ed25519", "~/.ssh/second key"]
        );
        assert_eq!(c.connect_timeout, Some(Duration::from_secs(7)));
        assert_eq!(c.strict_host_keys, Some(StrictHostKeys::AcceptNew));
    }

    #[test]
    fn negated_pattern_excludes_and_match_blocks_never_apply() {
        let c = cfg().resolve("gpu-99");
        assert_eq!(c.user.as_deref(), Some("fallback"));
        assert_eq!(c.port, Some(22));
        assert_eq!(c.proxy_jump, None);
        let other = cfg().resolve("OTHER");
        assert_eq!(
            other.user.as_deref(),
            Some("ignored-because-gpu-star-came-first")
        );
    }

    #[test]
    fn glob_patterns() {
        let pats = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(host_matches(&pats(&["gpu-?3"]), "gpu-03"));
        assert!(!host_matches(&pats(&["gpu-?3"]), "gpu-003"));
        assert!(host_matches(&pats(&["*.lab", "gpu*"]), "x.lab"));
        assert!(
            !host_matches(&pats(&["!gpu-1*"]), "gpu-2"),
            "only negations never match"
        );
        assert!(host_matches(&pats(&["10.0.*.*"]), "10.0.3.4"));
    }

    #[test]
    fn proxy_jump_forms() {
        assert_eq!(
            parse_jumps("deploy@bastion:2200").unwrap(),
            [JumpHost {
                user: Some("deploy".into()),
                host: "bastion".into(),
                port: Some(2200)
            }]
        );
        let chain = parse_jumps("a, ssh://u@[fe80::1]:22,b:23").unwrap();
        assert_eq!(chain.len(), 3);
        assert_eq!(chain[0].host, "a");
        assert_eq!(chain[1].host, "fe80::1");
        assert_eq!(chain[1].port, Some(22));
        assert_eq!(chain[2].port, Some(23));
        assert_eq!(parse_jumps("none").unwrap(), []);
        assert!(parse_jumps("u@:22").is_err());
        assert!(parse_jumps("host:99999").is_err());
        let c = cfg().resolve("gpu-07");
        assert_eq!(c.proxy_jump.unwrap()[0].port, Some(2200));
    }

    #[test]
    fn bad_values_name_the_line() {
        let err = SshConfig::parse("Host a\n  Port twenty\n", "cfg").unwrap_err();
        assert_eq!(err.to_string(), "cfg:2: 'twenty' is not a port number");
        assert!(SshConfig::parse("StrictHostKeyChecking maybe", "c").is_err());
    }

    #[test]
    fn strict_host_key_checking_off_keeps_where_it_was_set() {
        let text = "Host gpu-*\n  StrictHostKeyChecking yes\nHost *\n  StrictHostKeyChecking=Off\n";
        let c = SshConfig::parse(text, "cfg").unwrap();
        assert_eq!(
            c.resolve("gpu-01").strict_host_keys,
            Some(StrictHostKeys::Yes)
        );
        assert_eq!(
            c.resolve("db-01").strict_host_keys,
            Some(StrictHostKeys::Off {
                value: "Off".into(),
                at: "cfg:4".into()
            })
        );
    }

    #[test]
    fn paths_expand_home_and_tokens() {
        let t = Tokens {
            home: Path::new("/home/me"),
            local_user: "me",
            host: "10.0.0.3",
            remote_user: "deploy",
            port: 22,
        };
        assert_eq!(
            expand_path("~/.ssh/id_%r@%h", &t),
            PathBuf::from("/home/me/.ssh/id_deploy@10.0.0.3")
        );
        assert_eq!(expand_path("%d/k%%", &t), PathBuf::from("/home/me/k%"));
        assert_eq!(expand_path("/abs/key", &t), PathBuf::from("/abs/key"));
    }

    #[test]
    fn load_treats_a_missing_file_as_empty_and_refuses_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let missing = SshConfig::load(&dir.path().join("none")).unwrap();
        assert!(missing.resolve("h").port.is_none());
        let fifo = dir.path().join("config");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = SshConfig::load(&fifo).unwrap_err().to_string();
        assert!(err.ends_with("it is a FIFO, not a regular file"), "{err}");
    }
}
