//! `authorized_key` (ansible.posix.authorized_key): public keys in a user's
//! `~/.ssh/authorized_keys` (or `path`). A key is matched by its type and
//! blob, so a new comment or new options replace its line in place; other
//! keys are left alone (`exclusive` is refused). The file is written 0600,
//! owned by the user.
//!
//! # Example
//!
//! ```yaml
//! - name: Let the Slurm admin log in to the GPU nodes
//!   authorized_key:
//!     user: slurmadmin
//!     key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILD+XaTqkFb1sHulV7N6ejUN0zjcWk1TOE1KlMr7kLLT slurmadmin@login01
//! ```

use crate::base::shell::quote;
use crate::modules::kit::account::valid_name;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::files::{self, FileFact, FileState, Kind, WriteOpts};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const AUTHORIZED_KEY: ModuleSpec = ModuleSpec {
    name: "authorized_key",
    source: file!(),
    aliases: &["ansible.posix.authorized_key"],
    params: &AuthorizedKeyArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct AuthorizedKeyArgs {
        /// the account whose keys these are (it owns the file)
        user: String,
        /// one public key line, or several on separate lines
        key: String,
        /// whether the keys are there
        state: Presence = Presence::Present,
        /// the file (default `~user/.ssh/authorized_keys`)
        path: Option<String>,
        /// create the file's folder (mode 0700, owned by the user) when it is missing; an existing one is left as it is
        manage_dir: bool = true,
        /// only false: keys not named are left alone
        exclusive: bool = false,
    }
}

struct AuthorizedKey {
    query: Query,
    keys: Vec<String>,
    state: Presence,
    manage_dir: bool,
}

/// The type and blob of a key line, past any options before them.
fn identity(line: &str) -> Option<(&str, &str)> {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.windows(2).find_map(|w| {
        let t = w[0];
        let is_type = ["ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"]
            .iter()
            .any(|p| t.starts_with(p));
        is_type.then_some((w[0], w[1]))
    })
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AuthorizedKeyArgs::read(p)?;
    if a.exclusive {
        return Err(p.error(
            "exclusive",
            "exclusive is not supported: keys not named are left alone",
        ));
    }
    if !valid_name(&a.user) {
        return Err(p.error("user", format!("'{}' is not a user name", a.user)));
    }
    let keys: Vec<String> = a
        .key
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    if keys.is_empty() {
        return Err(p.error("key", "no public key given"));
    }
    if let Some(bad) = keys.iter().find(|k| identity(k).is_none()) {
        return Err(p.error("key", format!("'{bad}' is not a public key line")));
    }
    if a.path.as_deref().is_some_and(|p| !p.starts_with('/')) {
        return Err(p.error("path", "path must be absolute"));
    }
    Ok(Box::new(AuthorizedKey {
        query: Query {
            user: a.user,
            path: a.path,
        },
        keys,
        state: a.state,
        manage_dir: a.manage_dir,
    }))
}

struct Query {
    user: String,
    path: Option<String>,
}

/// The account's home and group, whether the file's folder exists, and
/// the file.
#[derive(Clone, Debug, PartialEq)]
struct Target {
    home: String,
    group: String,
    dir: bool,
    file: Option<FileState>,
}

struct KeyFileFact;

impl Fact for KeyFileFact {
    type Query = Query;
    /// `None` when there is no such user.
    type Value = Option<Target>;

    fn key(q: &Query) -> String {
        format!(
            "authorized_key:{}:{}",
            q.user,
            q.path.as_deref().unwrap_or("~")
        )
    }

    fn script(q: &Query) -> String {
        let u = quote(&q.user);
        let path = match &q.path {
            Some(p) => quote(p),
            None => "\"$h/.ssh/authorized_keys\"".into(),
        };
        // The file is read as FileFact reads it, at a path known only here.
        // Its first line sets `p`, which is set above instead.
        let file = FileFact::script("");
        let file = file.split_once('\n').map_or("", |(_, rest)| rest);
        format!(
            "h=$(getent passwd {u} | cut -d: -f6); [ -n \"$h\" ] || {{ echo; exit 0; }}\n\
             printf '%s\\n' \"$h\"; id -gn {u}\np={path}\n\
             [ -d \"$(dirname -- \"$p\")\" ] && echo dir || echo nodir\n{file}"
        )
    }

    fn parse(q: &Query, r: &ProbeResult) -> Result<Option<Target>, ModuleError> {
        let mut parts = r.stdout.splitn(4, '\n');
        let home = parts.next().unwrap_or_default();
        if home.is_empty() {
            return Ok(None);
        }
        let (Some(group), Some(dir), Some(rest)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(fact::bad(
                Self::key(q),
                format!("truncated: {:?}", r.stdout),
            ));
        };
        let file = ProbeResult {
            rc: r.rc,
            stdout: rest.to_string(),
            stderr: r.stderr.clone(),
        };
        Ok(Some(Target {
            home: home.into(),
            group: group.into(),
            dir: dir == "dir",
            file: FileFact::parse("", &file)?,
        }))
    }

    fn render(t: &Option<Target>) -> ProbeResult {
        let Some(t) = t else {
            return ProbeResult::ok("\n");
        };
        let file = FileFact::render(&t.file);
        let dir = if t.dir { "dir" } else { "nodir" };
        ProbeResult {
            stdout: format!("{}\n{}\n{dir}\n{}", t.home, t.group, file.stdout),
            ..file
        }
    }
}

impl AuthorizedKey {
    /// The file's lines once the keys are in (or out).
    fn edited(&self, current: &str) -> String {
        let mut lines: Vec<String> = current.lines().map(str::to_string).collect();
        match self.state {
            Presence::Present => {
                for key in &self.keys {
                    match lines.iter().position(|l| identity(l) == identity(key)) {
                        Some(i) => lines[i] = key.clone(),
                        None => lines.push(key.clone()),
                    }
                }
            }
            Presence::Absent => lines.retain(|l| {
                identity(l).is_none() || !self.keys.iter().any(|k| identity(k) == identity(l))
            }),
        }
        lines.into_iter().map(|l| l + "\n").collect()
    }
}

impl Module for AuthorizedKey {
    fn probes(&self) -> Vec<Probe> {
        vec![KeyFileFact::probe(&self.query)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let user = &self.query.user;
        let Some(target) = KeyFileFact::read(facts, &self.query)? else {
            return Err(ModuleError::Absent(format!("no user {user}")));
        };
        let path = self
            .query
            .path
            .clone()
            .unwrap_or_else(|| format!("{}/.ssh/authorized_keys", target.home));
        let current = match &target.file {
            Some(st) if st.kind == Kind::File => st.content.clone().ok_or_else(|| {
                ModuleError::Refused(format!("{path} is not a text file to edit"))
            })?,
            Some(_) => {
                return Err(ModuleError::Refused(format!(
                    "{path} is not a regular file"
                )))
            }
            None if self.state == Presence::Absent => return Ok(Plan::noop()),
            None => String::new(),
        };
        let content = self.edited(&current);
        let opts = WriteOpts {
            mode: Some(0o600),
            owner: Some(user.clone()),
            group: Some(target.group.clone()),
            ..WriteOpts::default()
        };
        let mut plan = Plan::noop();
        if !target.dir {
            let dir = path.rsplit_once('/').map_or("/", |(d, _)| d).to_string();
            if !self.manage_dir {
                return Err(ModuleError::Absent(format!("{dir} does not exist")));
            }
            plan.changes
                .push(Change::new(&dir, None, Some("directory".into())));
            plan.steps.push(format!(
                "mkdir -p {d} && chown -- {u}:{g} {d} && chmod 700 {d}",
                d = quote(&dir),
                u = quote(user),
                g = quote(&target.group)
            ));
        }
        let mut part = files::plan_content(&path, target.file.as_ref(), &content, &opts, true)?;
        if part.changes.is_empty() && plan.changes.is_empty() {
            return Ok(plan);
        }
        part.effects.push(KeyFileFact::predict(
            &self.query,
            &Some(Target {
                dir: true,
                file: Some(FileState::written(&content, 0o600, user, &target.group)),
                ..target
            }),
        ));
        plan.absorb(part);
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    let q = Query {
        user: "alice".into(),
        path: None,
    };
    rt.check::<KeyFileFact>(&q, Some(target(Some(KEY_A))));
    rt.check::<KeyFileFact>(
        &q,
        Some(Target {
            dir: false,
            ..target(None)
        }),
    );
    rt.check::<KeyFileFact>(&q, None);
}

#[cfg(test)]
const KEY_A: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA alice@lab\n";

#[cfg(test)]
fn target(content: Option<&str>) -> Target {
    Target {
        home: "/home/alice".into(),
        group: "alice".into(),
        dir: true,
        file: content.map(|c| FileState::written(c, 0o600, "alice", "alice")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, settled};
    use serde_json::json;

    fn facts(t: Option<Target>) -> Facts {
        let q = Query {
            user: "alice".into(),
            path: None,
        };
        let mut f = Facts::default();
        f.insert(KeyFileFact::key(&q), KeyFileFact::render(&t));
        f
    }

    /// The plan, after checking that the state it predicts needs nothing.
    fn plan(params: serde_json::Value, t: Option<Target>) -> Plan {
        let mut params = params;
        params["user"] = json!("alice");
        let m = build_test(&AUTHORIZED_KEY, params).unwrap();
        let before = facts(t);
        let plan = m.plan(&before).unwrap();
        assert_sh_syntax(&*m, &plan);
        assert_eq!(m.plan(&settled(&before, &plan)).unwrap(), Plan::noop());
        plan
    }

    fn written(plan: &Plan) -> String {
        let f = settled(&facts(None), plan);
        let q = Query {
            user: "alice".into(),
            path: None,
        };
        KeyFileFact::read(&f, &q)
            .unwrap()
            .unwrap()
            .file
            .unwrap()
            .content
            .unwrap()
    }

    #[test]
    fn a_key_is_added_once_and_its_new_comment_replaces_its_line() {
        let other = "ssh-rsa AAAAB3other bob\n";
        let p = plan(json!({"key": KEY_A.trim()}), Some(target(Some(other))));
        assert_eq!(written(&p), format!("{other}{KEY_A}"));
        let p = plan(json!({"key": KEY_A.trim()}), Some(target(Some(KEY_A))));
        assert_eq!(p, Plan::noop());
        let renamed = "from=\"10.0.0.1\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA alice@new";
        let p = plan(json!({"key": renamed}), Some(target(Some(KEY_A))));
        assert_eq!(written(&p), format!("{renamed}\n"));
    }

    #[test]
    fn a_missing_folder_is_made_for_the_user() {
        let p = plan(
            json!({"key": KEY_A}),
            Some(Target {
                dir: false,
                ..target(None)
            }),
        );
        assert_eq!(p.steps[0], "mkdir -p /home/alice/.ssh && chown -- alice:alice /home/alice/.ssh && chmod 700 /home/alice/.ssh");
        assert_eq!(written(&p), KEY_A);
        let m = build_test(
            &AUTHORIZED_KEY,
            json!({"user": "alice", "key": KEY_A, "manage_dir": false}),
        )
        .unwrap();
        let err = m
            .plan(&facts(Some(Target {
                dir: false,
                ..target(None)
            })))
            .unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn absent_keys_are_removed_and_nothing_is_made_for_them() {
        let other = "ssh-rsa AAAAB3other bob\n";
        let p = plan(
            json!({"key": KEY_A, "state": "absent"}),
            Some(target(Some(&format!("{KEY_A}# note\n{other}")))),
        );
        assert_eq!(written(&p), format!("# note\n{other}"));
        assert_eq!(
            plan(json!({"key": KEY_A, "state": "absent"}), Some(target(None))),
            Plan::noop()
        );
    }

    #[test]
    fn the_file_is_read_at_the_path_the_probe_computes() {
        let q = |path: Option<&str>| Query {
            user: "alice".into(),
            path: path.map(str::to_string),
        };
        let home = KeyFileFact::script(&q(None));
        assert_eq!(home.matches("p=").count(), 1, "{home}");
        assert!(home.contains("p=\"$h/.ssh/authorized_keys\"\n"), "{home}");
        let given = KeyFileFact::script(&q(Some("/etc/ssh/keys/alice")));
        assert_eq!(given.matches("p=").count(), 1, "{given}");
        assert!(given.contains("p=/etc/ssh/keys/alice\n"), "{given}");
    }

    #[test]
    fn bad_input_is_refused() {
        let m = build_test(&AUTHORIZED_KEY, json!({"user": "nobody", "key": KEY_A})).unwrap();
        assert!(m.plan(&facts(None)).is_err());
        assert!(
            build_error(&AUTHORIZED_KEY, json!({"user": "a", "key": "hello"}))
                .contains("not a public key")
        );
        assert!(build_error(
            &AUTHORIZED_KEY,
            json!({"user": "a", "key": KEY_A, "exclusive": true})
        )
        .contains("not supported"));
        assert!(build_error(
            &AUTHORIZED_KEY,
            json!({"user": "a", "key": KEY_A, "path": "x"})
        )
        .contains("absolute"));
    }
}
