//! Where and as whom to connect, from inventory variables, command-line
//! options and `ssh_config`, in Ansible's precedence: inventory variables
//! win over the command line, which wins over `ssh_config`, which wins
//! over defaults.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use super::config::{expand_path, parse_jumps, HostConfig, JumpHost, StrictHostKeys, Tokens};
use super::error::RouteError;
use super::known_hosts::HostKeyPolicy;
use super::{check_become_password, Secret, SshOptions};

pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_KEYS: [&str; 3] = ["id_ed25519", "id_ecdsa", "id_rsa"];

/// One SSH server to log in to (the target or a jump host).
#[derive(Clone, Debug, PartialEq)]
pub struct Endpoint {
    /// How the user knows it: the inventory name or the jump alias.
    pub name: String,
    pub host: String,
    pub port: u16,
    pub user: String,
    pub keys: Vec<PathBuf>,
    pub password: Option<Secret>,
    pub connect_timeout: Duration,
    pub host_keys: HostKeyPolicy,
}

impl Endpoint {
    /// `gpu-03 (10.0.0.3:22)`, the prefix of every message about it.
    pub fn display(&self) -> String {
        format!("{} ({}:{})", self.name, self.host, self.port)
    }
}

/// The target plus how to get there and how to escalate on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    pub target: Endpoint,
    pub jumps: Vec<Endpoint>,
    pub become_password: Option<Secret>,
    pub become_method: String,
    /// `ansible_become_flags`: sudo's options on this host.
    pub become_flags: Option<String>,
}

pub fn resolve(
    opts: &SshOptions,
    name: &str,
    vars: &Map<String, Value>,
) -> Result<Route, RouteError> {
    let alias = var(vars, &["ansible_host", "ansible_ssh_host"]).unwrap_or_else(|| name.into());
    let hc = opts.config.resolve(&alias);
    let port = match var(vars, &["ansible_port", "ansible_ssh_port"]) {
        Some(p) => p.parse().map_err(|_| RouteError::Port {
            host: name.to_string(),
            value: p.clone(),
        })?,
        None => hc.port.unwrap_or(22),
    };
    let user = var(vars, &["ansible_user", "ansible_ssh_user"])
        .or_else(|| opts.user.clone())
        .or_else(|| hc.user.clone())
        .unwrap_or_else(|| opts.local_user.clone());
    let host = hc
        .hostname
        .as_deref()
        .map(|h| h.replace("%h", &alias))
        .unwrap_or_else(|| alias.clone());
    let tokens = Tokens {
        home: &opts.home,
        local_user: &opts.local_user,
        host: &host,
        remote_user: &user,
        port,
    };
    let explicit: Vec<PathBuf> = var(
        vars,
        &["ansible_ssh_private_key_file", "ansible_private_key_file"],
    )
    .map(|k| expand_path(&k, &tokens))
    .into_iter()
    .chain(opts.private_key.clone())
    .collect();
    let keys = key_files(opts, explicit, &hc.identity_files, &tokens);
    let jump_specs = match common_args_jump(vars)? {
        Some(j) => j,
        None => hc.proxy_jump.clone().unwrap_or_default(),
    };
    let jumps = jump_specs
        .iter()
        .map(|j| jump_endpoint(opts, j))
        .collect::<Result<Vec<_>, _>>()?;
    let known = known_hosts_files(opts, hc.known_hosts_files.as_deref(), &tokens);
    let target = Endpoint {
        name: name.to_string(),
        host,
        port,
        user,
        keys,
        password: var(
            vars,
            &[
                "ansible_password",
                "ansible_ssh_pass",
                "ansible_ssh_password",
            ],
        )
        .map(Secret::new)
        .or_else(|| opts.password.clone()),
        connect_timeout: opts
            .connect_timeout
            .or(hc.connect_timeout)
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        host_keys: host_key_policy(opts, &hc, known)?,
    };
    Ok(Route {
        target,
        jumps,
        become_password: become_password(opts, name, vars)?,
        become_method: var(vars, &["ansible_become_method"]).unwrap_or_else(|| "sudo".into()),
        become_flags: var(vars, &["ansible_become_flags", "ansible_sudo_flags"]),
    })
}

/// A jump host is configured by `ssh_config` alone, as `ssh -J` does; the
/// target's password is never offered to it.
fn jump_endpoint(opts: &SshOptions, jump: &JumpHost) -> Result<Endpoint, RouteError> {
    let hc = opts.config.resolve(&jump.host);
    let host = hc.hostname.clone().unwrap_or_else(|| jump.host.clone());
    let port = jump.port.or(hc.port).unwrap_or(22);
    let user = jump
        .user
        .clone()
        .or(hc.user.clone())
        .unwrap_or_else(|| opts.local_user.clone());
    let tokens = Tokens {
        home: &opts.home,
        local_user: &opts.local_user,
        host: &host,
        remote_user: &user,
        port,
    };
    let explicit = opts.private_key.clone().into_iter().collect();
    let known = known_hosts_files(opts, hc.known_hosts_files.as_deref(), &tokens);
    Ok(Endpoint {
        name: jump.host.clone(),
        keys: key_files(opts, explicit, &hc.identity_files, &tokens),
        connect_timeout: opts
            .connect_timeout
            .or(hc.connect_timeout)
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        host_keys: host_key_policy(opts, &hc, known)?,
        host,
        port,
        user,
        password: None,
    })
}

/// `StrictHostKeyChecking no` would have nodeprov connect to unverified
/// hosts, so it is refused rather than quietly read as accept-new; with
/// `--accept-new-host-keys` the operator has said what they want instead.
fn host_key_policy(
    opts: &SshOptions,
    hc: &HostConfig,
    files: Vec<PathBuf>,
) -> Result<HostKeyPolicy, RouteError> {
    let accept_new = match &hc.strict_host_keys {
        _ if opts.accept_new_host_keys => true,
        Some(StrictHostKeys::Off { value, at }) => {
            return Err(RouteError::StrictOff {
                value: value.clone(),
                at: at.clone(),
            })
        }
        Some(StrictHostKeys::AcceptNew) => true,
        Some(StrictHostKeys::Yes) | None => false,
    };
    Ok(HostKeyPolicy { files, accept_new })
}

/// Explicit keys, then `IdentityFile`s; the default `~/.ssh/id_*` only when
/// neither names one, as OpenSSH does (extra keys cost server auth tries).
fn key_files(
    opts: &SshOptions,
    explicit: Vec<PathBuf>,
    configured: &[String],
    tokens: &Tokens,
) -> Vec<PathBuf> {
    let mut keys = explicit;
    keys.extend(configured.iter().map(|k| expand_path(k, tokens)));
    if keys.is_empty() {
        keys.extend(
            DEFAULT_KEYS
                .iter()
                .map(|k| opts.home.join(".ssh").join(k))
                .filter(|k| k.exists()),
        );
    }
    let mut seen = Vec::new();
    keys.retain(|k| {
        let new = !seen.contains(k);
        seen.push(k.clone());
        new
    });
    keys
}

/// `--known-hosts`, else `UserKnownHostsFile`, else `~/.ssh/known_hosts`;
/// the system file is also consulted unless `--known-hosts` was given.
fn known_hosts_files(opts: &SshOptions, configured: Option<&[String]>, t: &Tokens) -> Vec<PathBuf> {
    if let Some(file) = &opts.known_hosts {
        return vec![file.clone()];
    }
    let mut files: Vec<PathBuf> = match configured {
        Some(list) => list.iter().map(|f| expand_path(f, t)).collect(),
        None => vec![opts.home.join(".ssh/known_hosts")],
    };
    files.extend(opts.system_known_hosts.clone());
    files
}

/// `-J hop` or `-o ProxyJump=hop` in `ansible_ssh_common_args`.
fn common_args_jump(vars: &Map<String, Value>) -> Result<Option<Vec<JumpHost>>, RouteError> {
    let Some(args) = var(vars, &["ansible_ssh_common_args"]) else {
        return Ok(None);
    };
    let words = crate::base::shell::split(&args);
    let mut it = words.iter();
    while let Some(w) = it.next() {
        let value = if w == "-J" || w == "-o" {
            let next = it.next().map(String::as_str).unwrap_or_default();
            if w == "-J" {
                Some(next)
            } else {
                proxy_jump_option(next)
            }
        } else if let Some(v) = w.strip_prefix("-J") {
            Some(v)
        } else {
            w.strip_prefix("-o").and_then(proxy_jump_option)
        };
        if let Some(v) = value {
            return parse_jumps(v).map(Some).map_err(RouteError::CommonArgs);
        }
    }
    Ok(None)
}

fn proxy_jump_option(opt: &str) -> Option<&str> {
    let (k, v) = opt.split_once('=')?;
    k.trim()
        .eq_ignore_ascii_case("proxyjump")
        .then_some(v.trim())
}

/// A variable as text; inventories give ports as numbers or strings.
/// The inventory's become password wins over the run-wide one, which was
/// checked when it was read.
fn become_password(
    opts: &SshOptions,
    name: &str,
    vars: &Map<String, Value>,
) -> Result<Option<Secret>, RouteError> {
    match var(vars, &["ansible_become_password", "ansible_become_pass"]).map(Secret::new) {
        Some(pw) => {
            check_become_password(&pw, &format!("{name}: ansible_become_password"))?;
            Ok(Some(pw))
        }
        None => Ok(opts.become_password.clone()),
    }
}

fn var(vars: &Map<String, Value>, names: &[&str]) -> Option<String> {
    names.iter().find_map(|n| match vars.get(*n)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::ssh::config::SshConfig;
    use serde_json::json;
    use std::path::Path;

    const CONFIG: &str = "
Host gpu-*
    HostName %h.fleet.internal
    User cfguser
    Port 2222
    IdentityFile ~/.ssh/fleet
    ProxyJump ops@bastion:2200
    ConnectTimeout 3
Host bastion
    HostName 192.0.2.1
    IdentityFile ~/.ssh/bastion_key
";

    fn opts() -> SshOptions {
        SshOptions {
            config: SshConfig::parse(CONFIG, "test").unwrap(),
            home: PathBuf::from("/home/me"),
            local_user: "me".into(),
            ..SshOptions::default()
        }
    }

    fn vars(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn ssh_config_fills_what_inventory_and_cli_leave_open() {
        let r = resolve(&opts(), "gpu-03", &Map::new()).unwrap();
        let t = &r.target;
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str()),
            ("gpu-03.fleet.internal", 2222, "cfguser")
        );
        assert_eq!(t.keys, [PathBuf::from("/home/me/.ssh/fleet")]);
        assert_eq!(t.connect_timeout, Duration::from_secs(3));
        assert_eq!(
            t.host_keys.files,
            [PathBuf::from("/home/me/.ssh/known_hosts")]
        );
        assert!(!t.host_keys.accept_new);
        assert_eq!(r.become_method, "sudo");
        let j = &r.jumps[0];
        assert_eq!(
            (j.host.as_str(), j.port, j.user.as_str()),
            ("192.0.2.1", 2200, "ops")
        );
        assert_eq!(j.keys, [PathBuf::from("/home/me/.ssh/bastion_key")]);
        assert_eq!(j.password, None);
    }

    #[test]
    fn inventory_wins_over_cli_which_wins_over_ssh_config() {
        let mut o = opts();
        o.user = Some("cliuser".into());
        o.private_key = Some(PathBuf::from("/keys/cli"));
        o.connect_timeout = Some(Duration::from_secs(30));
        o.password = Some(Secret::new("cli-pass".into()));
        let r = resolve(&o, "gpu-03", &Map::new()).unwrap();
        assert_eq!(r.target.user, "cliuser");
        assert_eq!(r.target.keys[0], PathBuf::from("/keys/cli"));
        assert_eq!(r.target.connect_timeout, Duration::from_secs(30));

        let inv = vars(json!({
            "ansible_host": "gpu-03-mgmt",
            "ansible_port": 22,
            "ansible_user": "deploy",
            "ansible_ssh_private_key_file": "~/.ssh/inv_key",
            "ansible_password": "inv-pass",
            "ansible_become_pass": "sudo-pass",
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -J jump.example:2022",
        }));
        let r = resolve(&o, "gpu-03", &inv).unwrap();
        let t = &r.target;
        // ansible_host is what ssh would be given, so ssh_config still maps it.
        assert_eq!(t.host, "gpu-03-mgmt.fleet.internal");
        assert_eq!((t.port, t.user.as_str()), (22, "deploy"));
        assert_eq!(
            t.keys,
            [
                PathBuf::from("/home/me/.ssh/inv_key"),
                PathBuf::from("/keys/cli"),
                PathBuf::from("/home/me/.ssh/fleet")
            ]
        );
        assert_eq!(t.password.as_ref().unwrap().expose(), "inv-pass");
        assert_eq!(r.become_password.as_ref().unwrap().expose(), "sudo-pass");
        assert_eq!(r.jumps[0].host, "jump.example");
        assert_eq!(r.jumps[0].port, 2022);
    }

    #[test]
    fn a_become_password_with_a_line_break_is_refused_before_connecting() {
        for (pw, what) in [
            ("s3cr3t\nid > /tmp/x", "newline"),
            ("s3cr3t\rid", "carriage return"),
        ] {
            let inv = vars(json!({ "ansible_become_password": pw }));
            let err = resolve(&opts(), "gpu-03", &inv)
                .map(drop)
                .expect_err("refused")
                .to_string();
            assert!(
                err.starts_with("gpu-03: ansible_become_password: ")
                    && err.contains(&format!("contains a {what} character")),
                "{err}"
            );
            assert!(!err.contains("s3cr3t"), "the password is not shown: {err}");
        }
    }

    #[test]
    fn defaults_when_nothing_is_configured() {
        let r = resolve(&opts(), "10.0.0.9", &Map::new()).unwrap();
        let t = &r.target;
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str()),
            ("10.0.0.9", 22, "me")
        );
        assert_eq!(t.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
        assert!(r.jumps.is_empty());
        assert_eq!(t.display(), "10.0.0.9 (10.0.0.9:22)");
    }

    #[test]
    fn known_hosts_flag_replaces_the_user_files_and_accept_new_applies() {
        let mut o = opts();
        o.known_hosts = Some(PathBuf::from("/tmp/kh"));
        o.system_known_hosts = Some(PathBuf::from("/etc/ssh/ssh_known_hosts"));
        o.accept_new_host_keys = true;
        let t = resolve(&o, "x", &Map::new()).unwrap().target;
        assert_eq!(t.host_keys.files, [Path::new("/tmp/kh")]);
        assert!(t.host_keys.accept_new);
    }

    #[test]
    fn strict_host_key_checking_no_is_refused_unless_accept_new_is_asked_for() {
        let config = "Host bastion\n  StrictHostKeyChecking no\nHost *\n  ProxyJump bastion\n";
        let mut o = opts();
        o.config = SshConfig::parse(config, "/home/me/.ssh/config").unwrap();
        for host in ["bastion", "gpu-03"] {
            let err = resolve(&o, host, &Map::new()).unwrap_err();
            assert_eq!(
                err.to_string(),
                "StrictHostKeyChecking no in /home/me/.ssh/config:2 is not honoured: nodeprov \
                 never connects to an unverified host; use accept-new or --accept-new-host-keys"
            );
        }
        o.accept_new_host_keys = true;
        let r = resolve(&o, "gpu-03", &Map::new()).unwrap();
        assert!(r.target.host_keys.accept_new && r.jumps[0].host_keys.accept_new);
    }

    #[test]
    fn bad_port_variable_is_reported() {
        let err = resolve(&opts(), "h", &vars(json!({"ansible_port": "ssh"}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "h: ansible_port 'ssh' is not a port number"
        );
    }
}
