//! `user` (ansible.builtin.user): a local account, read with `getent
//! passwd`, `id` and `getent shadow`, and made with useradd, usermod and
//! userdel. Password hashes never reach a report: changes show them masked.
//!
//! A `password` hash is compared with /etc/shadow's field, which needs root;
//! the password ageing fields (`password_expire_min`, `password_expire_max`,
//! `password_expire_warn`, `password_expire_account_disable`, in days) are
//! compared with /etc/shadow's ageing fields and set by one chage, `-1`
//! emptying a field. A task runs one usermod at most. The ids useradd picks
//! are known only after it ran, so in check mode a later task on an account
//! created earlier is planned against it missing (as in Ansible). A bare `!`
//! or `!!` field (never had a password) is not "locked": `password_lock`
//! leaves it as it is.
//!
//! # Example
//!
//! ```yaml
//! - name: Add the GPU operators' account, with access to the GPU devices
//!   user:
//!     name: gpuops
//!     groups: [video, render]
//!     append: true
//!     shell: /bin/bash
//! - name: Make Slurm's system account, with one uid on every node
//!   user:
//!     name: slurm
//!     uid: 64030
//!     group: slurm
//!     system: true
//!     home: /var/lib/slurm
//!     shell: /sbin/nologin
//! ```

use std::collections::BTreeSet;

use crate::base::shell::quote;
use crate::modules::kit::account::valid_name;
use crate::modules::kit::fact::{self, Fact};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params, Presence};
use crate::remote::probe::{Probe, ProbeResult};

pub(crate) const USER: ModuleSpec = ModuleSpec {
    name: "user",
    source: file!(),
    aliases: &["ansible.builtin.user"],
    params: &UserArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

const MASK: &str = "(password hash)";

module_params! {
    struct UserArgs {
        /// the account's name
        name: String,
        /// whether the account exists
        state: Presence = Presence::Present,
        /// its numeric id
        uid: Option<i64>,
        /// its primary group (which must exist)
        group: Option<String>,
        /// its supplementary groups; given, the account is in exactly these (see `append`); unset leaves them alone
        groups: Vec<String>,
        /// add `groups` and leave the account's other groups alone
        append: bool = false,
        /// its login shell
        shell: Option<String>,
        /// its home directory (an existing account's home is not moved)
        home: Option<String>,
        /// make the home directory when the account is created
        #[aliases("createhome")]
        create_home: bool = true,
        /// a system account (an id from the system range) when it is created
        system: bool = false,
        /// the GECOS field
        comment: Option<String>,
        /// the password hash, as /etc/shadow holds it
        password: Option<String>,
        /// lock (true) or unlock (false) the password
        password_lock: Option<bool>,
        /// with `state: absent`, remove the home directory and mail spool too
        remove: bool = false,
        /// the fewest days between password changes (`-1`: no limit)
        password_expire_min: Option<i64>,
        /// the most days a password stays valid (`-1`: no limit)
        password_expire_max: Option<i64>,
        /// the days of warning before a password expires (`-1`: none)
        password_expire_warn: Option<i64>,
        /// the days after expiry before the account is disabled (`-1`: never)
        password_expire_account_disable: Option<i64>,
    }
}

struct User {
    name: String,
    state: Presence,
    uid: Option<u32>,
    group: Option<String>,
    /// `None` when the playbook does not manage the supplementary groups.
    groups: Option<BTreeSet<String>>,
    append: bool,
    shell: Option<String>,
    home: Option<String>,
    create_home: bool,
    system: bool,
    comment: Option<String>,
    password: Option<String>,
    password_lock: Option<bool>,
    remove: bool,
    /// Wanted ageing fields, in shadow's order.
    ageing: [Option<i64>; 4],
}

/// shadow's ageing fields after the password, with `chage`'s option and
/// the parameter that sets each.
const AGEING: [(&str, &str); 4] = [
    ("-m", "password_expire_min"),
    ("-M", "password_expire_max"),
    ("-W", "password_expire_warn"),
    ("-I", "password_expire_account_disable"),
];

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = UserArgs::read(p)?;
    if !valid_name(&a.name) {
        return Err(p.error("name", format!("'{}' is not a user name", a.name)));
    }
    for (key, group) in a
        .group
        .iter()
        .map(|g| ("group", g))
        .chain(a.groups.iter().map(|g| ("groups", g)))
    {
        if !valid_name(group) {
            return Err(p.error(key, format!("'{group}' is not a group name")));
        }
    }
    // passwd and shadow fields: a colon or a line break would split them.
    let fields = [
        ("shell", &a.shell),
        ("home", &a.home),
        ("comment", &a.comment),
        ("password", &a.password),
    ];
    for (key, value) in fields {
        if value.as_deref().is_some_and(|v| v.contains([':', '\n'])) {
            return Err(p.error(key, format!("{key} may not hold ':' or a line break")));
        }
    }
    let ageing = [
        a.password_expire_min,
        a.password_expire_max,
        a.password_expire_warn,
        a.password_expire_account_disable,
    ];
    for ((_, key), days) in AGEING.iter().zip(ageing) {
        if days.is_some_and(|d| d < -1) {
            return Err(p.error(key, format!("{key} is a number of days, or -1 for none")));
        }
    }
    let uid = a
        .uid
        .map(|u| u32::try_from(u).map_err(|_| p.error("uid", format!("{u} is not a uid"))))
        .transpose()?;
    Ok(Box::new(User {
        name: a.name,
        state: a.state,
        uid,
        group: a.group,
        groups: p.has("groups").then(|| a.groups.into_iter().collect()),
        append: a.append,
        shell: a.shell,
        home: a.home,
        create_home: a.create_home,
        system: a.system,
        comment: a.comment,
        password: a.password,
        password_lock: a.password_lock,
        remove: a.remove,
        ageing,
    }))
}

/// An account as the probe reads it.
#[derive(Clone, Debug, PartialEq)]
struct Account {
    uid: u32,
    /// The primary group's name.
    group: String,
    /// The other groups the account is in.
    groups: BTreeSet<String>,
    comment: String,
    home: String,
    shell: String,
    /// shadow's password field; `None` when /etc/shadow cannot be read.
    password: Option<String>,
    /// shadow's ageing fields (min, max, warn, inactive; `None` is empty);
    /// `None` when /etc/shadow cannot be read.
    ageing: Option<[Option<i64>; 4]>,
}

/// A password field locked the way `usermod -L` locks it: a `!` before a
/// hash. A bare `!` or `!!` is an account that never had a password.
fn locked(field: &str) -> bool {
    field.starts_with('!') && !field.trim_start_matches('!').is_empty()
}

struct AccountFact;

impl Fact for AccountFact {
    type Query = str;
    type Value = Option<Account>;

    fn key(name: &str) -> String {
        format!("user:{name}")
    }

    fn script(name: &str) -> String {
        let n = quote(name);
        format!(
            "if e=$(getent passwd {n}); then printf '%s\\n' \"$e\" | cut -d: -f3,5-; \
             id -gn {n}; id -Gn {n}; getent shadow {n} | cut -d: -f2,4-7 | sed 's/^/=/'; fi"
        )
    }

    fn parse(name: &str, r: &ProbeResult) -> Result<Option<Account>, ModuleError> {
        if r.stdout.trim().is_empty() {
            return Ok(None);
        }
        let bad = |what: &str| fact::bad(Self::key(name), format!("{what}: {:?}", r.stdout));
        let mut lines = r.stdout.lines();
        let (Some(passwd), Some(group), Some(all)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(bad("expected passwd, group and groups lines"));
        };
        let [uid, comment, home, shell] = passwd.splitn(4, ':').collect::<Vec<_>>()[..] else {
            return Err(bad("not a passwd entry"));
        };
        let shadow: Option<Vec<&str>> = lines
            .next()
            .and_then(|l| l.strip_prefix('='))
            .map(|l| l.split(':').collect());
        let (password, ageing) = match shadow.as_deref() {
            None => (None, None),
            Some([password, days @ ..]) if days.len() == 4 => {
                let mut ageing = [None; 4];
                for (slot, d) in ageing.iter_mut().zip(days) {
                    *slot = (!d.is_empty())
                        .then(|| d.parse().map_err(|_| bad("not a number of days")))
                        .transpose()?;
                }
                (Some(password.to_string()), Some(ageing))
            }
            Some(_) => return Err(bad("not a shadow entry")),
        };
        Ok(Some(Account {
            uid: uid.parse().map_err(|_| bad("not a uid"))?,
            group: group.to_string(),
            groups: all
                .split_whitespace()
                .filter(|g| *g != group)
                .map(str::to_string)
                .collect(),
            comment: comment.into(),
            home: home.into(),
            shell: shell.into(),
            password,
            ageing,
        }))
    }

    fn render(a: &Option<Account>) -> ProbeResult {
        let Some(a) = a else {
            return ProbeResult::ok("");
        };
        let mut out = format!(
            "{}:{}:{}:{}\n{}\n{}",
            a.uid, a.comment, a.home, a.shell, a.group, a.group
        );
        for g in &a.groups {
            out.push(' ');
            out.push_str(g);
        }
        out.push('\n');
        if let (Some(p), Some(ageing)) = (&a.password, &a.ageing) {
            let days = ageing.map(|d| d.map(|d| d.to_string()).unwrap_or_default());
            out.push_str(&format!("={p}:{}\n", days.join(":")));
        }
        ProbeResult::ok(out)
    }
}

impl User {
    /// The password field wanted, given the current one.
    fn password_field(&self, current: &str) -> String {
        match (&self.password, self.password_lock) {
            (Some(hash), Some(true)) => format!("!{}", hash.trim_start_matches('!')),
            (Some(hash), _) => hash.clone(),
            (None, Some(true))
                if !locked(current) && !current.trim_start_matches('!').is_empty() =>
            {
                format!("!{current}")
            }
            (None, Some(false)) if locked(current) => current[1..].to_string(),
            (None, _) => current.to_string(),
        }
    }

    fn create(&self, plan: &mut Plan) {
        let mut cmd = String::from("/usr/sbin/useradd");
        if self.system {
            cmd.push_str(" -r");
        }
        cmd.push_str(if self.create_home { " -m" } else { " -M" });
        if let Some(uid) = self.uid {
            cmd.push_str(&format!(" -u {uid}"));
        }
        let opts = [
            ("-g", self.group.clone()),
            (
                "-G",
                self.groups.as_ref().filter(|g| !g.is_empty()).map(join),
            ),
            ("-s", self.shell.clone()),
            ("-d", self.home.clone()),
            ("-c", self.comment.clone()),
            (
                "-p",
                self.password.as_ref().map(|_| self.password_field("")),
            ),
        ];
        for (flag, value) in opts {
            if let Some(v) = value {
                cmd.push_str(&format!(" {flag} {}", quote(&v)));
            }
        }
        cmd.push(' ');
        cmd.push_str(&quote(&self.name));
        plan.steps.push(cmd);
        if self.password.is_none() && self.password_lock == Some(true) {
            plan.steps
                .push(format!("/usr/sbin/usermod -L {}", quote(&self.name)));
        }
        let ageing: Vec<String> = AGEING
            .iter()
            .zip(self.ageing)
            .filter_map(|((flag, _), days)| Some(format!("{flag} {}", days?)))
            .collect();
        if !ageing.is_empty() {
            plan.steps.push(self.chage(&ageing));
        }
        plan.changes.push(Change::new(
            format!("user {}", self.name),
            None,
            Some("present".into()),
        ));
        // The ids useradd picks are known only once it ran.
        plan.effects.push(AccountFact::invalidate(&self.name));
    }

    /// The supplementary groups wanted, and usermod's option for them,
    /// where they differ from `have`.
    fn groups_change(
        &self,
        have: &BTreeSet<String>,
        primary: &str,
    ) -> Option<(BTreeSet<String>, String)> {
        let want: BTreeSet<String> = self
            .groups
            .as_ref()?
            .iter()
            .filter(|g| *g != primary)
            .cloned()
            .collect();
        let (target, flag, list) = if self.append {
            let missing = want.difference(have).cloned().collect();
            (have.union(&want).cloned().collect(), "-a -G", missing)
        } else {
            (want.clone(), "-G", want)
        };
        (target != *have).then(|| (target, format!("{flag} {}", quote(&join(&list)))))
    }

    /// The password field wanted, and usermod's option for it, where it
    /// differs from `have` (`None`: shadow could not be read).
    fn password_change(&self, have: Option<&str>) -> Result<Option<(String, String)>, ModuleError> {
        if self.password.is_none() && self.password_lock.is_none() {
            return Ok(None);
        }
        let Some(field) = have else {
            return Err(ModuleError::Missing(format!(
                "cannot read /etc/shadow for {}'s password: run the task as root (become)",
                self.name
            )));
        };
        let want = self.password_field(field);
        if want == field {
            return Ok(None);
        }
        let opt = if self.password.is_some() {
            format!("-p {}", quote(&want))
        } else if locked(&want) {
            "-L".into()
        } else {
            "-U".into()
        };
        Ok(Some((want, opt)))
    }

    fn modify(&self, cur: &Account, plan: &mut Plan) -> Result<(), ModuleError> {
        let mut after = cur.clone();
        let mut opts: Vec<String> = Vec::new();
        let mut change = |what: &str, before: String, now: String, opt: String| {
            plan.changes.push(
                Change::new(
                    format!("user {} {what}", self.name),
                    Some(before),
                    Some(now),
                )
                .with_evidence(format!("getent passwd {}", self.name)),
            );
            opts.push(opt);
        };
        if let Some(uid) = self.uid.filter(|u| *u != cur.uid) {
            change(
                "uid",
                cur.uid.to_string(),
                uid.to_string(),
                format!("-u {uid}"),
            );
            after.uid = uid;
        }
        if let Some(g) = self.group.as_ref().filter(|g| **g != cur.group) {
            change(
                "group",
                cur.group.clone(),
                g.clone(),
                format!("-g {}", quote(g)),
            );
            after.group = g.clone();
            after.groups.remove(g);
        }
        if let Some((target, opt)) = self.groups_change(&after.groups, &after.group) {
            change("groups", join(&after.groups), join(&target), opt);
            after.groups = target;
        }
        let fields = [
            ("shell", "-s", &self.shell, &mut after.shell),
            ("home", "-d", &self.home, &mut after.home),
            ("comment", "-c", &self.comment, &mut after.comment),
        ];
        for (what, flag, want, now) in fields {
            if let Some(w) = want.as_ref().filter(|w| *w != now) {
                change(what, now.clone(), w.clone(), format!("{flag} {}", quote(w)));
                *now = w.clone();
            }
        }
        if let Some((want, opt)) = self.password_change(cur.password.as_deref())? {
            let show = |f: &str| {
                if locked(f) {
                    format!("{MASK}, locked")
                } else {
                    MASK.into()
                }
            };
            let field = cur.password.as_deref().unwrap_or_default();
            change("password", show(field), show(&want), opt);
            after.password = Some(want);
        }
        if !opts.is_empty() {
            plan.steps.push(format!(
                "/usr/sbin/usermod {} {}",
                opts.join(" "),
                quote(&self.name)
            ));
        }
        if let Some(ageing) = self.ageing_change(cur.ageing, plan)? {
            after.ageing = Some(ageing);
        }
        if after != *cur {
            plan.effects
                .push(AccountFact::predict(&self.name, &Some(after)));
        }
        Ok(())
    }

    /// `chage` for the ageing fields that differ from `have` (`None`:
    /// shadow could not be read), and the fields it leaves.
    fn ageing_change(
        &self,
        have: Option<[Option<i64>; 4]>,
        plan: &mut Plan,
    ) -> Result<Option<[Option<i64>; 4]>, ModuleError> {
        if self.ageing.iter().all(Option::is_none) {
            return Ok(None);
        }
        let Some(mut now) = have else {
            return Err(ModuleError::Missing(format!(
                "cannot read /etc/shadow for {}'s password ageing: run the task as root (become)",
                self.name
            )));
        };
        let show = |d: Option<i64>| d.map_or_else(|| "none".to_string(), |d| d.to_string());
        let mut opts = Vec::new();
        for (((flag, key), want), slot) in AGEING.iter().zip(self.ageing).zip(&mut now) {
            // chage stores -1 as an empty field.
            let Some(want) = want.map(|d| (d != -1).then_some(d)).filter(|w| w != slot) else {
                continue;
            };
            plan.changes.push(
                Change::new(
                    format!("user {} {key}", self.name),
                    Some(show(*slot)),
                    Some(show(want)),
                )
                .with_evidence(format!("getent shadow {}", self.name)),
            );
            opts.push(format!("{flag} {}", want.unwrap_or(-1)));
            *slot = want;
        }
        if opts.is_empty() {
            return Ok(None);
        }
        plan.steps.push(self.chage(&opts));
        Ok(Some(now))
    }

    fn chage(&self, opts: &[String]) -> String {
        format!("/usr/bin/chage {} {}", opts.join(" "), quote(&self.name))
    }
}

fn join(groups: &BTreeSet<String>) -> String {
    groups.iter().cloned().collect::<Vec<_>>().join(",")
}

impl Module for User {
    fn probes(&self) -> Vec<Probe> {
        vec![AccountFact::probe(&self.name)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = AccountFact::read(facts, &self.name)?;
        let mut plan = Plan::noop();
        match (self.state, current) {
            (Presence::Absent, None) => {}
            (Presence::Absent, Some(cur)) => {
                plan.changes.push(
                    Change::new(
                        format!("user {}", self.name),
                        Some(format!("uid {}", cur.uid)),
                        None,
                    )
                    .with_evidence(format!("getent passwd {}", self.name)),
                );
                let remove = if self.remove { " -r" } else { "" };
                plan.steps
                    .push(format!("/usr/sbin/userdel{remove} {}", quote(&self.name)));
                plan.effects.push(AccountFact::predict(&self.name, &None));
            }
            (Presence::Present, None) => self.create(&mut plan),
            (Presence::Present, Some(cur)) => self.modify(&cur, &mut plan)?,
        }
        Ok(plan)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut fact::RoundTrip) {
    rt.check::<AccountFact>("alice", Some(alice()));
    rt.check::<AccountFact>(
        "alice",
        Some(Account {
            password: None,
            ageing: None,
            groups: BTreeSet::new(),
            comment: String::new(),
            ..alice()
        }),
    );
    rt.check::<AccountFact>("nobody-here", None);
}

#[cfg(test)]
fn alice() -> Account {
    Account {
        uid: 1001,
        group: "alice".into(),
        groups: ["docker".to_string(), "video".to_string()].into(),
        comment: "Alice Liddell, Lab 3".into(),
        home: "/home/alice".into(),
        shell: "/bin/bash".into(),
        password: Some("$6$salt$hash".into()),
        ageing: Some([Some(0), Some(99999), Some(7), None]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{
        assert_sh_syntax, build_error, build_test, facts_of, settled,
    };
    use serde_json::json;

    fn facts(account: Option<Account>) -> Facts {
        facts_of(&[(
            &AccountFact::key("alice"),
            &AccountFact::render(&account).stdout,
        )])
    }

    /// The plan's steps, after checking that the predicted state needs none.
    fn steps(mut params: serde_json::Value, account: Option<Account>) -> Vec<String> {
        params["name"] = json!("alice");
        let m = build_test(&USER, params).unwrap();
        let before = facts(account);
        let plan = m.plan(&before).unwrap();
        assert_sh_syntax(&*m, &plan);
        if !plan.effects.contains(&AccountFact::invalidate("alice")) {
            assert_eq!(m.plan(&settled(&before, &plan)).unwrap(), Plan::noop());
        }
        plan.steps
    }

    /// Planning fails, saying why, when /etc/shadow cannot be read.
    fn assert_needs_shadow(m: &dyn Module) {
        let unread = Account {
            password: None,
            ageing: None,
            ..alice()
        };
        let err = m.plan(&facts(Some(unread))).unwrap_err();
        assert!(err.to_string().contains("/etc/shadow"), "{err}");
    }

    #[test]
    fn a_missing_account_is_created_with_what_is_asked() {
        let s = steps(
            json!({"uid": 1001, "groups": ["video", "docker"], "shell": "/bin/bash",
                   "comment": "Alice L", "password": "$6$x$y", "create_home": false}),
            None,
        );
        assert_eq!(
            s,
            ["/usr/sbin/useradd -M -u 1001 -G docker,video -s /bin/bash -c 'Alice L' -p '$6$x$y' alice"]
        );
        let s = steps(json!({"system": true, "password_lock": true}), None);
        assert_eq!(
            s,
            [
                "/usr/sbin/useradd -r -m alice",
                "/usr/sbin/usermod -L alice"
            ]
        );
    }

    #[test]
    fn an_account_that_complies_needs_nothing() {
        let all = json!({"uid": 1001, "group": "alice", "groups": ["docker", "video"],
                         "shell": "/bin/bash", "home": "/home/alice",
                         "comment": "Alice Liddell, Lab 3", "password": "$6$salt$hash",
                         "password_lock": false});
        assert_eq!(steps(all, Some(alice())), Vec::<String>::new());
        let appended = json!({"groups": ["video"], "append": true});
        assert_eq!(steps(appended, Some(alice())), Vec::<String>::new());
    }

    #[test]
    fn differences_become_one_usermod() {
        let s = steps(
            json!({"uid": 2000, "shell": "/bin/zsh", "groups": ["video", "alice"]}),
            Some(alice()),
        );
        assert_eq!(s, ["/usr/sbin/usermod -u 2000 -G video -s /bin/zsh alice"]);
        let s = steps(json!({"groups": ["render"], "append": true}), Some(alice()));
        assert_eq!(s, ["/usr/sbin/usermod -a -G render alice"]);
        let s = steps(json!({"groups": []}), Some(alice()));
        assert_eq!(s, ["/usr/sbin/usermod -G '' alice"]);
        let s = steps(
            json!({"group": "docker", "groups": ["docker", "video"], "append": true}),
            Some(alice()),
        );
        assert_eq!(s, ["/usr/sbin/usermod -g docker alice"]);
        let s = steps(json!({"group": "docker"}), Some(alice()));
        assert_eq!(s, ["/usr/sbin/usermod -g docker alice"]);
    }

    #[test]
    fn passwords_are_compared_with_shadow_and_masked() {
        let m = build_test(&USER, json!({"name": "alice", "password": "$6$new$hash"})).unwrap();
        let plan = m.plan(&facts(Some(alice()))).unwrap();
        assert_eq!(plan.steps, ["/usr/sbin/usermod -p '$6$new$hash' alice"]);
        let shown: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            ["user alice password: (password hash) → (password hash)"]
        );
        assert_eq!(
            steps(json!({"password_lock": true}), Some(alice())),
            ["/usr/sbin/usermod -L alice"]
        );
        let lock_too = json!({"password": "$6$salt$hash", "password_lock": true});
        assert_eq!(
            steps(lock_too, Some(alice())),
            ["/usr/sbin/usermod -p '!$6$salt$hash' alice"]
        );
        let held = Account {
            password: Some("!$6$salt$hash".into()),
            ..alice()
        };
        assert_eq!(
            steps(json!({"password_lock": false}), Some(held)),
            ["/usr/sbin/usermod -U alice"]
        );
        assert_needs_shadow(m.as_ref());
    }

    #[test]
    fn password_ageing_is_compared_with_shadow_and_set_by_chage() {
        let all = json!({"password_expire_min": 0, "password_expire_max": 99999,
                         "password_expire_warn": 7, "password_expire_account_disable": -1});
        assert_eq!(steps(all, Some(alice())), Vec::<String>::new());
        let m = build_test(
            &USER,
            json!({"name": "alice", "password_expire_min": 7, "password_expire_max": -1,
                   "password_expire_account_disable": 30, "shell": "/bin/sh"}),
        )
        .unwrap();
        let plan = m.plan(&facts(Some(alice()))).unwrap();
        assert_eq!(
            plan.steps,
            [
                "/usr/sbin/usermod -s /bin/sh alice",
                "/usr/bin/chage -m 7 -M -1 -I 30 alice"
            ]
        );
        let shown: Vec<String> = plan.changes.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown[1..],
            [
                "user alice password_expire_min: 0 → 7",
                "user alice password_expire_max: 99999 → none",
                "user alice password_expire_account_disable: none → 30"
            ]
        );
        assert_eq!(
            m.plan(&settled(&facts(Some(alice())), &plan)).unwrap(),
            Plan::noop()
        );
        assert_eq!(
            steps(json!({"password_expire_warn": 14}), None),
            ["/usr/sbin/useradd -m alice", "/usr/bin/chage -W 14 alice"]
        );
        assert_needs_shadow(m.as_ref());
        assert!(
            build_error(&USER, json!({"name": "a", "password_expire_max": -2}))
                .contains("number of days")
        );
    }

    #[test]
    fn accounts_are_removed_once() {
        let gone = json!({"state": "absent", "remove": true});
        assert_eq!(
            steps(gone.clone(), Some(alice())),
            ["/usr/sbin/userdel -r alice"]
        );
        assert_eq!(steps(gone, None), Vec::<String>::new());
    }

    #[test]
    fn hostile_values_are_refused_or_quoted() {
        assert!(build_error(&USER, json!({"name": "-o"})).contains("not a user name"));
        assert!(build_error(&USER, json!({"name": "a", "groups": ["x y"]}))
            .contains("not a group name"));
        assert!(build_error(&USER, json!({"name": "a", "comment": "a:b"})).contains("':'"));
        assert_eq!(USER.params.canonical("createhome"), Some("create_home"));
        assert!(
            !USER.params.names.contains(&"move_home"),
            "refused at load, never ignored"
        );
        let s = steps(json!({"comment": "it's $(rm -rf /)"}), Some(alice()));
        assert_eq!(s, [r"/usr/sbin/usermod -c 'it'\''s $(rm -rf /)' alice"]);
    }
}
