//! `package` (and `dnf`, `yum`, `apt`): packages installed, upgraded or
//! removed with whichever of dnf, yum or apt-get the host has, planned from
//! one read of the installed packages per host (`kit::packages`); what
//! else it asks of the package manager is in `facts.rs`.
//!
//! **`package`** reads the installed packages once per host, in the batched
//! probe, whichever task asks. `name=1.2*` pins an apt version (resolved from
//! the package lists), `name-1.2` or `name-1.2-1` an rpm one (the version
//! dotted, so `cuda-toolkit-12-4` and `cuda-drivers-550` stay names), and
//! `@module:stream[/profile]` enables and installs a dnf module stream
//! (package groups such as `@core` or `@Development Tools` run Ansible's own
//! module, which installs them; removing a stream is refused); a
//! stream counts as in place once it is enabled, whichever profile is installed.
//! `name: "*"` with `state: latest` upgrades every installed package, as
//! Ansible's modules do (apt's `upgrade --with-new-pkgs`, dnf's and yum's
//! `upgrade`), planned from what the cache offers (apt's simulated upgrade).
//! `latest` and apt pins are planned from the host's package cache as it is,
//! without refreshing it (dnf's and yum's cached `list updates`, apt's
//! candidate); on a host whose rpm metadata was never downloaded, `latest`
//! says so and runs. `update_cache` refreshes before an install, or when the
//! apt lists are older than `cache_valid_time` (which asks for the refresh by
//! itself, as in Ansible's apt; dnf and yum keep no age to compare). Given
//! alone, it follows Ansible's modules: on apt, without `cache_valid_time`, it
//! refreshes every run, reported changed (as a command; check mode reports
//! drift); on dnf and yum it refreshes every apply and reports ok, as their
//! "Cache updated" is unchanged, so a second run shows nothing changed and
//! check mode neither runs it nor reports drift.
//!
//! # Example
//!
//! ```yaml
//! - name: Install the NVIDIA driver stream and the CUDA toolkit on RHEL
//!   dnf:
//!     name: ["@nvidia-driver:580-dkms", cuda-toolkit-12-4]
//!     state: present
//!   when: ansible_facts['os_family'] == 'RedHat'
//! - name: Install the driver and the toolkit on Ubuntu
//!   apt:
//!     name: [nvidia-driver-580, cuda-toolkit-12-4]
//!     update_cache: true
//!     cache_valid_time: 3600
//!   when: ansible_facts['os_family'] == 'Debian'
//! - name: Install slurmd, whatever the node's package manager
//!   package:
//!     name: slurmd
//! ```

mod facts;
mod steps;

use facts::{Available, Cleanup, DebFile, Offer, Streams};

use crate::modules::kit::fact::Fact;
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::packages::{Host, Installed, Manager};
use crate::modules::kit::plan::{Change, Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const PACKAGE: ModuleSpec = ModuleSpec {
    name: "package",
    source: file!(),
    aliases: &[
        "ansible.builtin.package",
        "dnf",
        "ansible.builtin.dnf",
        "yum",
        "ansible.builtin.yum",
        "apt",
        "ansible.builtin.apt",
    ],
    params: &PackageArgs::SPEC,
    free_form: None,
    kind: ModuleKind::Frontend,
    plugin: None,
    controller_file: None,
    build,
};

choices! {
    enum Want {
        Present = "present" | "installed",
        Absent = "absent" | "removed",
        Latest = "latest",
    }
}

module_params! {
    struct PackageArgs {
        /// one package or a list; `name=1.2*` (apt) or `name-1.2[-1]` (dnf, yum) pins a version, `@module:stream` enables and installs a dnf module stream, `*` with `state: latest` upgrades every installed package
        #[aliases("pkg")]
        name: Vec<String>,
        /// installed, removed, or at the newest version the repositories have
        state: Want = Want::Present,
        /// refresh the package lists first (alone: just refresh them)
        update_cache: bool = false,
        /// apt: refresh only when the lists are older than this many seconds
        cache_valid_time: Option<i64>,
        /// also remove packages nothing needs any more
        autoremove: bool = false,
        /// apt: remove downloaded archives that can no longer be downloaded
        autoclean: bool = false,
        /// apt: remove every downloaded archive
        clean: bool = false,
        /// apt: remove configuration files too
        purge: bool = false,
        /// apt: install this local .deb file
        deb: Option<String>,
        /// apt: install recommended packages too (default: apt's setting)
        install_recommends: Option<bool>,
        /// dnf/yum: repositories to enable for this run
        enablerepo: Vec<String>,
        /// dnf/yum: repositories to disable for this run
        disablerepo: Vec<String>,
        /// dnf/yum: install packages without checking their signatures
        disable_gpg_check: bool = false,
        /// dnf/yum: plugins to disable for this run
        disable_plugin: Vec<String>,
        /// the package manager to use (Ansible's `use`): `auto`, or the one the host has (dnf, yum, apt); another is refused
        #[aliases("use")]
        backend: Option<String>,
        /// apt and dnf: may install a pinned version older than the installed one (apt needs it said; dnf's install moves to a pinned version either way)
        allow_downgrade: bool = false,
        /// apt: seconds to wait for another apt's lock (dnf waits for its own lock, within the run's command timeout)
        lock_timeout: Option<i64>,
        /// dnf: take a version other than the newest when the newest cannot be installed
        nobest: Option<bool>,
        /// dnf: install weakly depended-on packages too
        install_weak_deps: Option<bool>,
    }
}

struct Package {
    names: Vec<String>,
    want: Want,
    update_cache: bool,
    cache_valid_time: Option<u64>,
    autoremove: bool,
    autoclean: bool,
    clean: bool,
    purge: bool,
    deb: Option<String>,
    install_recommends: Option<bool>,
    rpm_options: Vec<String>,
    apt_options: Vec<String>,
    /// The package manager the task names, if any.
    backend: Option<Manager>,
}

/// Package names as rpm and dpkg spell them (`name`, `name.arch`,
/// `lib:amd64`), with a version pin (`name=1.2*`, `name-1.2-1`) or a module
/// stream (`@name:stream/profile`).
fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with('-')
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+:~@-=*/".contains(&b))
}

/// Repository and plugin names, as dnf's command line takes them.
fn valid_id(n: &str) -> bool {
    !n.is_empty()
        && !n.starts_with('-')
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:*".contains(&b))
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = PackageArgs::read(p)?;
    let alone = a.update_cache || a.autoremove || a.autoclean || a.clean || a.deb.is_some();
    if a.name.is_empty() && !alone {
        return Err(p.error("name", "missing required parameter 'name'"));
    }
    // What a package provides is not what rpm -qa lists: planned from the
    // installed names, it would install on every run.
    let provides =
        |n: &&String| n.ends_with(')') && n.find('(').is_some_and(|i| i > 0 && valid_name(&n[..i]));
    if let Some(provided) = a.name.iter().find(provides) {
        return Err(p.error(
            "name",
            format!(
                "'{provided}' names what a package provides; name the package itself \
                 (nodeprov plans from the installed package names)"
            ),
        ));
    }
    // A group's name may hold spaces (`@Development Tools`).
    if let Some(group) = a
        .name
        .iter()
        .find(|n| n.starts_with('@') && !n.contains(':'))
    {
        return Err(p.unsupported(
            "name",
            format!("'{group}' is a package group; only module streams (@name:stream) are installed natively"),
        ));
    }
    if let Some(bad) = a.name.iter().find(|n| !valid_name(n)) {
        return Err(p.error("name", format!("'{bad}' is not a package name")));
    }
    if a.name.iter().any(|n| n == "*") && (a.name.len() > 1 || a.state != Want::Latest) {
        return Err(p.error(
            "name",
            "'*' stands for every installed package: it is taken alone, with state: latest (an upgrade of them all)",
        ));
    }
    let mut rpm_options = Vec::new();
    for (key, flag, ids) in [
        ("enablerepo", "--enablerepo=", &a.enablerepo),
        ("disablerepo", "--disablerepo=", &a.disablerepo),
        ("disable_plugin", "--disableplugin=", &a.disable_plugin),
    ] {
        if let Some(bad) = ids.iter().find(|i| !valid_id(i)) {
            return Err(p.error(key, format!("'{bad}' is not a valid name")));
        }
        rpm_options.extend(ids.iter().map(|i| format!("{flag}{i}")));
    }
    if a.disable_gpg_check {
        rpm_options.push("--nogpgcheck".into());
    }
    match a.nobest {
        Some(true) => rpm_options.push("--nobest".into()),
        Some(false) => rpm_options.push("--best".into()),
        None => {}
    }
    if let Some(weak) = a.install_weak_deps {
        let value = if weak { "True" } else { "False" };
        rpm_options.push(format!("--setopt=install_weak_deps={value}"));
    }
    let mut apt_options = Vec::new();
    if a.allow_downgrade {
        apt_options.push("--allow-downgrades".to_string());
    }
    match a.lock_timeout {
        Some(t) if t < 0 => return Err(p.error("lock_timeout", "must not be negative")),
        Some(t) => apt_options.push(format!("-o DPkg::Lock::Timeout={t}")),
        None => {}
    }
    let backend = match a
        .backend
        .as_deref()
        .map(|b| b.trim_start_matches("ansible.builtin."))
    {
        None | Some("auto") => None,
        Some("dnf" | "dnf4") => Some(Manager::Dnf),
        Some("yum") => Some(Manager::Yum),
        Some("apt") => Some(Manager::Apt),
        Some(other) => {
            return Err(p.error(
                "backend",
                format!(
                    "use: '{other}' is not a package manager nodeprov drives (dnf, yum or apt)"
                ),
            ))
        }
    };
    let cache_valid_time = match a.cache_valid_time {
        Some(t) if t < 0 => return Err(p.error("cache_valid_time", "must not be negative")),
        t => t.map(|t| t as u64),
    };
    if let Some(d) = &a.deb {
        if !d.starts_with('/') {
            return Err(p.error("deb", "must be an absolute path on the host"));
        }
    }
    Ok(Box::new(Package {
        names: a.name,
        want: a.state,
        // As in Ansible's apt, a cache_valid_time asks for the refresh by itself.
        update_cache: a.update_cache || cache_valid_time.is_some_and(|t| t > 0),
        cache_valid_time,
        autoremove: a.autoremove,
        autoclean: a.autoclean,
        clean: a.clean,
        purge: a.purge,
        deb: a.deb,
        install_recommends: a.install_recommends,
        rpm_options,
        apt_options,
        backend,
    }))
}

/// What one named package needs.
#[derive(Debug, PartialEq)]
enum Action {
    /// `install` with this argument (a name, a pinned spec, a file).
    Install(String),
    /// `upgrade` of an installed package: by name with dnf and yum; with
    /// apt only of them all (`name: "*"`), as Ansible's apt upgrades them.
    Upgrade(String),
    Remove(String),
}

/// A name split into the package and what it pins.
enum Spec<'a> {
    Plain(&'a str),
    /// apt `name=1.2*`: a glob over Debian versions.
    AptPin(&'a str, &'a str),
    /// rpm `name-1.2` or `name-1.2-1`.
    RpmPin(&'a str, &'a str),
    /// `@module:stream[/profile]`.
    Stream(&'a str, &'a str),
}

impl<'a> Spec<'a> {
    fn parse(raw: &'a str, manager: Manager) -> Self {
        if let Some(m) = raw.strip_prefix('@') {
            let (module, rest) = m.split_once(':').unwrap_or((m, ""));
            return Spec::Stream(module, rest.split('/').next().unwrap_or(""));
        }
        if manager == Manager::Apt {
            return match raw.split_once('=') {
                Some((n, v)) => Spec::AptPin(n, v),
                None => Spec::Plain(raw),
            };
        }
        // The version starts at the first dash followed by a dotted number
        // that leaves at most one more dash (the release) after it; names
        // such as cuda-toolkit-12-4 or cuda-drivers-550 stay names. A
        // trailing `.arch` (kernel-devel-$(uname -r)) is not part of the
        // version the package database lists.
        let bare = installed_name(raw, manager);
        let mut cut = None;
        for (i, _) in bare.match_indices('-') {
            let rest = &bare[i + 1..];
            let version = rest.split('-').next().unwrap_or("");
            if rest.starts_with(|c: char| c.is_ascii_digit())
                && version.contains('.')
                && rest.matches('-').count() <= 1
            {
                cut = Some(i);
                break;
            }
        }
        match cut {
            Some(i) => Spec::RpmPin(&bare[..i], &bare[i + 1..]),
            None => Spec::Plain(raw),
        }
    }

    fn name(&self) -> &'a str {
        match self {
            Spec::Plain(n) | Spec::AptPin(n, _) | Spec::RpmPin(n, _) | Spec::Stream(n, _) => n,
        }
    }
}

/// The name the package database lists `name` under: without apt's
/// `:arch` or rpm's `.arch`.
fn installed_name(name: &str, manager: Manager) -> &str {
    const RPM_ARCHES: [&str; 6] = [
        ".x86_64", ".aarch64", ".noarch", ".i686", ".ppc64le", ".s390x",
    ];
    match manager {
        Manager::Apt => name.split(':').next().unwrap_or(name),
        _ => RPM_ARCHES
            .iter()
            .find_map(|a| name.strip_suffix(a))
            .unwrap_or(name),
    }
}

/// `*` matches any run of characters; everything else itself.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head)
                && (0..=text.len() - head.len()).any(|i| {
                    text.is_char_boundary(head.len() + i) && glob(tail, &text[head.len() + i..])
                })
        }
    }
}

/// Whether an installed rpm `[epoch:]version-release` is what `pin` names.
fn rpm_matches(installed: &str, pin: &str) -> bool {
    let evr = installed.split_once(':').map_or(installed, |(_, vr)| vr);
    evr == pin || evr.strip_prefix(pin).is_some_and(|r| r.starts_with('-'))
}

impl Module for Package {
    fn probes(&self) -> Vec<Probe> {
        let mut probes = vec![Installed::probe(&())];
        if self.asks_cache() {
            probes.push(Available::probe(&self.offered()));
        }
        if self.autoremove || self.autoclean {
            probes.push(Cleanup::probe(&()));
        }
        if self.names.iter().any(|n| n.starts_with('@')) {
            probes.push(Streams::probe(&()));
        }
        if let Some(d) = &self.deb {
            probes.push(DebFile::probe(d));
        }
        probes
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let Some(host) = Installed::read(facts, &())? else {
            return Err(ModuleError::Missing(
                "no supported package manager on this host (dnf, yum or apt-get)".into(),
            ));
        };
        if let Some(wanted) = self.backend.filter(|b| *b != host.manager) {
            return Err(ModuleError::Unsupported(format!(
                "use: {} was asked for; this host has {}",
                wanted.name(),
                host.manager.name()
            )));
        }
        let apt_only = self.autoclean || self.clean || self.purge || self.deb.is_some();
        if apt_only && host.manager != Manager::Apt {
            return Err(ModuleError::Unsupported(format!(
                "deb, purge, clean and autoclean need apt; this host has {}",
                host.manager.name()
            )));
        }
        if self.cache_only() && host.manager != Manager::Apt {
            return Ok(self.rpm_cache_refresh(host.manager));
        }
        let offer = match self.asks_cache() {
            true => Available::read(facts, &self.offered())?,
            false => Offer::default(),
        };
        let mut plan = Plan::noop();
        let mut actions = Vec::new();
        let wanted = match self.names == ["*"] {
            true => self.every_upgrade(&host, &offer),
            false => {
                let mut wanted = Vec::new();
                for raw in &self.names {
                    wanted.extend(self.one(&host, &offer, facts, raw)?);
                }
                wanted
            }
        };
        for (change, action) in wanted {
            plan.changes.push(change);
            actions.push(action);
        }
        if let Some(path) = &self.deb {
            if let Some((change, action)) = self.local_deb(&host, facts, path)? {
                plan.changes.push(change);
                actions.push(action);
            }
        }
        let refresh = self.refresh(&host, &actions);
        if let Some(change) = &refresh {
            plan.changes.push(change.clone());
        }
        let cleanup = self.cleanup(&host, facts, &actions)?;
        plan.changes.extend(cleanup);
        if plan.changes.is_empty() {
            return Ok(plan);
        }
        plan.steps.push(steps::script(
            self,
            host.manager,
            refresh.is_some(),
            &actions,
        ));
        plan.effects.push(Installed::invalidate(&()));
        plan.effects.push(Available::invalidate(&self.offered()));
        plan.effects.push(Cleanup::invalidate(&()));
        plan.effects.push(Streams::invalidate(&()));
        Ok(plan)
    }

    /// apt's `update_cache` alone without `cache_valid_time` refreshes
    /// every run, changed, as Ansible's apt does: a command, not a state.
    fn is_command(&self) -> bool {
        self.cache_only() && self.cache_valid_time.is_none()
    }
}

impl Package {
    /// `update_cache` is all the task asks.
    fn cache_only(&self) -> bool {
        self.names.is_empty()
            && self.deb.is_none()
            && self.update_cache
            && !(self.autoremove || self.autoclean || self.clean)
    }

    /// dnf's and yum's cache refresh alone: run, but reported unchanged
    /// ("Cache updated"), as Ansible's dnf and yum do, so a second run of a
    /// playbook shows nothing changed and check mode no drift.
    fn rpm_cache_refresh(&self, manager: Manager) -> Plan {
        let mut plan = Plan::noop();
        plan.steps.push(steps::script(self, manager, true, &[]));
        plan.effects.push(Available::invalidate(&self.offered()));
        plan.returns.insert("msg".into(), "Cache updated".into());
        plan.upkeep = true;
        plan
    }

    /// Whether planning needs what the package cache offers: for `latest`
    /// and for apt version patterns.
    fn asks_cache(&self) -> bool {
        self.want == Want::Latest || self.names.iter().any(|n| n.contains('='))
    }

    /// The names the package cache is asked about: apt pins without their
    /// version pattern.
    fn offered(&self) -> Vec<String> {
        let bare = |n: &String| n.split_once('=').map_or(n.clone(), |(n, _)| n.to_string());
        self.names.iter().map(bare).collect()
    }

    /// The change and action one name needs, if any.
    fn one(
        &self,
        host: &Host,
        offer: &Offer,
        facts: &Facts,
        raw: &str,
    ) -> Result<Option<(Change, Action)>, ModuleError> {
        let spec = match host.installed.contains_key(raw) {
            true => Spec::Plain(raw),
            false => Spec::parse(raw, host.manager),
        };
        let name = spec.name();
        let installed = host.versions(installed_name(name, host.manager));
        let now = installed.first().cloned();
        let evidence = if host.manager == Manager::Apt {
            "dpkg-query -W"
        } else {
            "rpm -qa"
        };
        let change = |before: Option<String>, after: &str| {
            Change::new(
                format!("package {name}"),
                Some(before.unwrap_or_else(|| "absent".into())),
                Some(after.to_string()),
            )
            .with_evidence(evidence)
        };
        if let Spec::Stream(module, stream) = spec {
            if host.manager != Manager::Dnf {
                return Err(ModuleError::Unsupported(format!(
                    "module streams ({raw}) need dnf; this host has {}",
                    host.manager.name()
                )));
            }
            if self.want == Want::Absent {
                return Err(ModuleError::Unsupported(format!(
                    "removing module streams ({raw}) is not supported"
                )));
            }
            let enabled = Streams::read(facts, &())?;
            let current = enabled.get(module);
            if current.map(String::as_str) == Some(stream) {
                return Ok(None);
            }
            let c = Change::new(
                format!("module {module}"),
                Some(current.cloned().unwrap_or_else(|| "not enabled".into())),
                Some(stream.to_string()),
            )
            .with_evidence("dnf module list --enabled");
            return Ok(Some((c, Action::Install(raw.to_string()))));
        }
        let purgeable = self.purge && host.config_only.iter().any(|n| n == name);
        match (self.want, &spec) {
            (Want::Absent, _) if installed.is_empty() && !purgeable => Ok(None),
            (Want::Absent, _) => Ok(Some((
                change(now.or_else(|| Some("config files".into())), "absent"),
                Action::Remove(name.to_string()),
            ))),
            (_, Spec::AptPin(_, pattern)) => {
                if installed.iter().any(|v| glob(pattern, v)) {
                    return Ok(None);
                }
                let versions = offer.versions.get(name).map(Vec::as_slice).unwrap_or(&[]);
                let Some(v) = versions.iter().find(|v| glob(pattern, v)) else {
                    return Err(ModuleError::Missing(format!(
                        "no version of {name} matching {pattern} in the package lists"
                    )));
                };
                Ok(Some((
                    change(now, v),
                    Action::Install(format!("{name}={v}")),
                )))
            }
            (_, Spec::RpmPin(_, pin)) => {
                if installed.iter().any(|v| rpm_matches(v, pin)) {
                    return Ok(None);
                }
                Ok(Some((change(now, pin), Action::Install(raw.to_string()))))
            }
            (Want::Present, _) if !installed.is_empty() => Ok(None),
            (Want::Present, _) => Ok(Some((
                change(None, "installed"),
                Action::Install(raw.into()),
            ))),
            (Want::Latest, _) if installed.is_empty() => {
                let after = offer.candidate.get(name).map_or("latest", String::as_str);
                Ok(Some((change(None, after), Action::Install(raw.into()))))
            }
            (Want::Latest, _) => self.latest(host, offer, raw, name, &installed, change),
        }
    }

    fn latest(
        &self,
        host: &Host,
        offer: &Offer,
        raw: &str,
        name: &str,
        installed: &[String],
        change: impl Fn(Option<String>, &str) -> Change,
    ) -> Result<Option<(Change, Action)>, ModuleError> {
        let now = installed.first().cloned();
        let action = if host.manager == Manager::Apt {
            Action::Install(raw.into())
        } else {
            Action::Upgrade(raw.into())
        };
        if offer.unknown {
            return Ok(Some((
                change(now, "latest (repository metadata not cached yet)"),
                action,
            )));
        }
        match offer.candidate.get(name) {
            Some(c) if !installed.contains(c) => Ok(Some((change(now, c), action))),
            _ => Ok(None),
        }
    }

    /// `name: "*"` with `state: latest`: every installed package the cache
    /// offers an upgrade of, each upgraded by name (dnf and yum upgrade
    /// them all when their metadata was never downloaded).
    fn every_upgrade(&self, host: &Host, offer: &Offer) -> Vec<(Change, Action)> {
        let evidence = match host.manager {
            Manager::Apt => "apt-get -s upgrade",
            _ => "list updates",
        };
        if offer.unknown {
            let c = Change::new(
                "packages",
                None,
                Some("latest (repository metadata not cached yet)".into()),
            );
            return vec![(c.with_evidence(evidence), Action::Upgrade("*".into()))];
        }
        offer
            .candidate
            .iter()
            .filter_map(|(name, candidate)| {
                let installed = host.versions(name);
                let now = installed.first()?.clone();
                if installed.contains(candidate) {
                    return None;
                }
                let c = Change::new(
                    format!("package {name}"),
                    Some(now),
                    Some(candidate.clone()),
                )
                .with_evidence(evidence);
                Some((c, Action::Upgrade(name.clone())))
            })
            .collect()
    }

    fn local_deb(
        &self,
        host: &Host,
        facts: &Facts,
        path: &str,
    ) -> Result<Option<(Change, Action)>, ModuleError> {
        let Some((name, version)) = DebFile::read(facts, path)? else {
            return Err(ModuleError::Absent(format!("no .deb file at {path}")));
        };
        let installed = host.versions(&name);
        if installed.contains(&version) {
            return Ok(None);
        }
        let before = installed
            .first()
            .cloned()
            .unwrap_or_else(|| "absent".into());
        let c = Change::new(format!("package {name}"), Some(before), Some(version))
            .with_evidence(format!("dpkg-deb -W {path}"));
        Ok(Some((c, Action::Install(path.to_string()))))
    }

    /// The cache refresh this run needs: with `cache_valid_time`, when the
    /// lists are older (apt); without, before any install, or alone (apt).
    fn refresh(&self, host: &Host, actions: &[Action]) -> Option<Change> {
        if !self.update_cache {
            return None;
        }
        let installs = actions.iter().any(|a| !matches!(a, Action::Remove(_)));
        // Only apt's lists have an age; dnf and yum refresh before installs.
        let valid_time = self
            .cache_valid_time
            .filter(|_| host.manager == Manager::Apt);
        let stale = match (valid_time, host.cache_age) {
            (Some(valid), Some(age)) => age > valid,
            (Some(_), None) => true,
            (None, _) => installs || self.is_command(),
        };
        if !stale {
            return None;
        }
        let before = host
            .cache_age
            .map_or("unknown age".into(), |a| format!("refreshed {a}s ago"));
        Some(Change::new(
            "package cache",
            Some(before),
            Some("refreshed".into()),
        ))
    }

    /// What `autoremove`, `autoclean` and `clean` will remove.
    fn cleanup(
        &self,
        host: &Host,
        facts: &Facts,
        actions: &[Action],
    ) -> Result<Vec<Change>, ModuleError> {
        let mut changes = Vec::new();
        if self.autoremove || self.autoclean {
            let left = Cleanup::read(facts, &())?;
            let removes = actions.iter().any(|a| matches!(a, Action::Remove(_)));
            if self.autoremove && !left.unneeded.is_empty() {
                changes.extend(left.unneeded.iter().map(|n| {
                    let now = host.versions(n).first().cloned();
                    Change::new(
                        format!("package {n}"),
                        now,
                        Some("absent (unneeded)".into()),
                    )
                }));
            } else if self.autoremove && removes {
                // What the removal leaves unneeded is known only after it.
                changes.push(Change::new(
                    "unneeded packages",
                    None,
                    Some("removed".into()),
                ));
            }
            if self.autoclean && !left.obsolete.is_empty() {
                changes.push(Change::new(
                    "obsolete archives",
                    Some(left.obsolete.join(" ")),
                    Some("removed".into()),
                ));
            }
        }
        if self.clean && host.archives > 0 {
            changes.push(Change::new(
                "archive cache",
                Some(format!("{} .deb files", host.archives)),
                Some("empty".into()),
            ));
        }
        Ok(changes)
    }
}

/// Values of every fact here, for the round trip every fact must pass.
#[cfg(test)]
pub(crate) fn fact_samples(rt: &mut crate::modules::kit::fact::RoundTrip) {
    facts::fact_samples(rt);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{assert_sh_syntax, build_error, build_test, facts_of};
    use serde_json::json;

    const EL: &str = "manager dnf\ni npdemo 1.0-1\ni tmux 3.2a-4.el9\n";
    const DEB: &str = "manager apt\ncache 7200 2\ni curl 7.88.1-10\nc oldpkg\n";

    /// Plans `params` on a host whose probes answer `answers` (key, stdout),
    /// the installed packages first.
    fn plan_on(params: serde_json::Value, answers: &[(&str, &str)]) -> Result<Plan, ModuleError> {
        let m = build_test(&PACKAGE, params).unwrap();
        let keys: Vec<String> = m.probes().into_iter().map(|p| p.key).collect();
        let pairs: Vec<(&str, &str)> = keys
            .iter()
            .map(|k| {
                let a = answers.iter().find(|(p, _)| k.starts_with(p));
                (k.as_str(), a.map_or("", |(_, a)| *a))
            })
            .collect();
        let plan = m.plan(&facts_of(&pairs));
        if let Ok(p) = &plan {
            assert_sh_syntax(&*m, p);
        }
        plan
    }

    fn step(params: serde_json::Value, answers: &[(&str, &str)]) -> String {
        let plan = plan_on(params, answers).unwrap();
        assert_eq!(plan.steps.len(), 1, "{plan:?}");
        plan.steps[0].clone()
    }

    #[test]
    fn installed_packages_are_a_noop() {
        let plan = plan_on(
            json!({"name": ["npdemo", "tmux"]}),
            &[("pkg:installed", EL)],
        );
        assert_eq!(plan.unwrap(), Plan::noop());
    }

    #[test]
    fn missing_packages_are_installed_with_the_hosts_manager() {
        let plan = plan_on(json!({"name": "tmux, htop"}), &[("pkg:installed", EL)]).unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert_eq!(plan.changes[0].subject, "package htop");
        assert!(
            plan.steps[0].starts_with("dnf -y install -- htop ||"),
            "{}",
            plan.steps[0]
        );
        let s = step(
            json!({"name": "htop", "update_cache": true, "install_recommends": false}),
            &[("pkg:installed", DEB)],
        );
        assert!(s.starts_with("apt-get update -q ||"), "{s}");
        assert!(
            s.contains("--no-install-recommends install -- htop ||"),
            "{s}"
        );
    }

    #[test]
    fn rpm_options_go_on_every_dnf_command() {
        let s = step(
            json!({"name": "htop", "enablerepo": "epel", "disablerepo": ["a", "b"],
                   "disable_gpg_check": true, "disable_plugin": "subscription-manager",
                   "update_cache": true}),
            &[("pkg:installed", EL)],
        );
        let opts = "--enablerepo=epel --disablerepo=a --disablerepo=b --disableplugin=subscription-manager --nogpgcheck";
        assert!(s.starts_with(&format!("dnf -q {opts} makecache ||")), "{s}");
        assert!(
            s.contains(&format!("dnf -y {opts} install -- htop ||")),
            "{s}"
        );
        assert!(
            build_error(&PACKAGE, json!({"name": "x", "enablerepo": "a;b"}))
                .contains("not a valid name")
        );
    }

    #[test]
    fn ansible_package_options_reach_the_package_manager() {
        let s = step(
            json!({"name": "htop", "nobest": true, "install_weak_deps": false, "backend": "dnf"}),
            &[("pkg:installed", EL)],
        );
        assert!(
            s.contains("dnf -y --nobest --setopt=install_weak_deps=False install -- htop ||"),
            "{s}"
        );
        let s = step(
            json!({"name": "htop", "allow_downgrade": true, "lock_timeout": 60}),
            &[("pkg:installed", DEB)],
        );
        assert!(
            s.contains("--allow-downgrades -o DPkg::Lock::Timeout=60 install -- htop"),
            "{s}"
        );
        // The loader takes Ansible's `use` and `pkg` as `backend` and `name`.
        let wrong = plan_on(
            json!({"name": "htop", "backend": "apt"}),
            &[("pkg:installed", EL)],
        );
        assert_eq!(
            wrong.unwrap_err().to_string(),
            "use: apt was asked for; this host has dnf"
        );
        assert!(build_error(
            &PACKAGE,
            json!({"name": "x", "backend": "ansible.posix.rhel_rpm_ostree"})
        )
        .contains("not a package manager nodeprov drives"));
    }

    #[test]
    fn rpm_version_pins() {
        let installed = [("pkg:installed", EL)];
        // `kernel-devel-$(uname -r)` names the arch too.
        for pin in ["npdemo-1.0", "npdemo-1.0-1", "npdemo-1.0-1.noarch"] {
            assert_eq!(
                plan_on(json!({"name": pin}), &installed).unwrap(),
                Plan::noop(),
                "{pin}"
            );
        }
        let plan = plan_on(json!({"name": "npdemo-1.1"}), &installed).unwrap();
        assert_eq!(plan.changes[0].to_string(), "package npdemo: 1.0-1 → 1.1");
        assert!(plan.steps[0].starts_with("dnf -y install -- npdemo-1.1 ||"));
        assert!(rpm_matches("2:1.0-1.el9", "1.0"));
        assert!(!rpm_matches("1.0.1-1", "1.0"));
        // A dash in the name is not a version, nor is an undotted number.
        for name in ["python3-libs", "cuda-toolkit-12-4", "cuda-drivers-550"] {
            let plan = plan_on(json!({ "name": name }), &installed).unwrap();
            assert_eq!(plan.changes[0].subject, format!("package {name}"));
        }
        let plan = plan_on(json!({"name": "cuda-drivers-550.54.15"}), &installed).unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "package cuda-drivers: absent → 550.54.15"
        );
        // An installed name is a name, and an arch suffix names the package.
        let el = [(
            "pkg:installed",
            "manager dnf\ni libfoo-1.0 2-1\ni glibc 2.34-100.el9\n",
        )];
        for name in ["libfoo-1.0", "glibc.x86_64"] {
            assert_eq!(
                plan_on(json!({ "name": name }), &el).unwrap(),
                Plan::noop(),
                "{name}"
            );
        }
        let deb = [("pkg:installed", "manager apt\ni libc6 2.36-9\n")];
        assert_eq!(
            plan_on(json!({"name": "libc6:amd64"}), &deb).unwrap(),
            Plan::noop()
        );
    }

    #[test]
    fn apt_version_pins_resolve_from_the_lists() {
        let offer = "c curl 7.88.1-10+deb12u8\nv curl 7.88.1-10+deb12u8\nv curl 7.88.1-10\nv curl 7.74.0-1\n";
        let answers = [("pkg:installed", DEB), ("pkg:available:", offer)];
        assert_eq!(
            plan_on(json!({"name": "curl=7.88*"}), &answers).unwrap(),
            Plan::noop()
        );
        let plan = plan_on(json!({"name": "curl=7.74*"}), &answers).unwrap();
        assert_eq!(
            plan.changes[0].to_string(),
            "package curl: 7.88.1-10 → 7.74.0-1"
        );
        assert!(plan.steps[0].contains("install -- curl=7.74.0-1 ||"));
        let err = plan_on(json!({"name": "curl=9*"}), &answers).unwrap_err();
        assert!(
            err.to_string().contains("no version of curl matching 9*"),
            "{err}"
        );
    }

    #[test]
    fn latest_upgrades_to_the_cached_candidate() {
        let s = step(
            json!({"name": "npdemo", "state": "latest"}),
            &[
                ("pkg:installed", EL),
                ("pkg:available:", "c npdemo 1.1-1\n"),
            ],
        );
        assert!(s.starts_with("dnf -y upgrade -- npdemo ||"), "{s}");
        let current = plan_on(
            json!({"name": "npdemo", "state": "latest"}),
            &[("pkg:installed", EL), ("pkg:available:", "")],
        );
        assert_eq!(current.unwrap(), Plan::noop());
        let unknown = plan_on(
            json!({"name": "npdemo", "state": "latest"}),
            &[("pkg:installed", EL), ("pkg:available:", "unknown\n")],
        )
        .unwrap();
        assert!(unknown.changes[0].to_string().contains("not cached"));
        let apt = plan_on(
            json!({"name": "curl", "state": "latest"}),
            &[
                ("pkg:installed", DEB),
                ("pkg:available:", "c curl 7.88.1-10\n"),
            ],
        );
        assert_eq!(apt.unwrap(), Plan::noop());
    }

    /// EL7: yum's `list updates` as recorded, read by the same awk.
    #[test]
    fn yum_list_updates_is_read() {
        let recorded = "Updated Packages\nnpdemo.noarch                 1.1-1                  local\nkernel.x86_64   3.10.0-1160.119.1.el7   updates\n";
        let out = std::process::Command::new("awk")
            .arg(r#"NF == 3 && $1 ~ /\./ { n = $1; sub(/\.[^.]*$/, "", n); print "c", n, $2 }"#)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(recorded.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let lines = String::from_utf8(out.stdout).unwrap();
        assert_eq!(lines, "c npdemo 1.1-1\nc kernel 3.10.0-1160.119.1.el7\n");
        assert!(facts::Available::script(&["npdemo".into()])
            .contains(r#"$1 ~ /\./ { n = $1; sub(/\.[^.]*$/, "", n); print "c", n, $2 }"#));
        let s = step(
            json!({"name": "npdemo", "state": "latest"}),
            &[
                ("pkg:installed", "manager yum\ni npdemo 1.0-1\n"),
                ("pkg:available:", &lines),
            ],
        );
        assert!(s.starts_with("yum -y upgrade -- npdemo ||"), "{s}");
    }

    #[test]
    fn module_streams() {
        let recorded = "Rocky Linux 9 - AppStream\nName           Stream              Profiles   Summary\nnvidia-driver  latest-dkms [e]     default [d] Nvidia driver\nnodejs         18 [d][e]           common     Javascript runtime\n";
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s' {} | {}",
                crate::base::shell::quote(recorded),
                facts::Streams::script(&()).split_once(" | ").unwrap().1
            ))
            .output()
            .unwrap();
        let enabled = String::from_utf8(out.stdout).unwrap();
        assert_eq!(enabled, "nvidia-driver latest-dkms\nnodejs 18\n");
        let spec = json!({"name": "@nvidia-driver:latest-dkms/default"});
        let answers = [("pkg:installed", EL), ("pkg:streams", enabled.as_str())];
        assert_eq!(plan_on(spec, &answers).unwrap(), Plan::noop());
        let plan = plan_on(json!({"name": "@nodejs:20"}), &answers).unwrap();
        assert_eq!(plan.changes[0].to_string(), "module nodejs: 18 → 20");
        assert!(plan.steps[0].starts_with("dnf -y install -- @nodejs:20 ||"));
        for group in ["@core", "@DGX-1 Configurations"] {
            let e = build_test(&PACKAGE, json!({"name": group})).err().unwrap();
            assert!(
                e.unsupported && e.message.contains("is a package group"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn removal_purge_and_autoremove() {
        let plan = plan_on(
            json!({"name": "tmux", "state": "absent", "autoremove": true}),
            &[("pkg:installed", EL), ("pkg:cleanup", "remove libevent\n")],
        )
        .unwrap();
        assert_eq!(plan.changes[0].before.as_deref(), Some("3.2a-4.el9"));
        assert_eq!(plan.changes[1].subject, "package libevent");
        assert!(plan.steps[0].starts_with("dnf -y remove -- tmux ||"));
        assert!(plan.steps[0].contains("\ndnf -y autoremove ||"));
        let s = step(
            json!({"name": "oldpkg", "state": "absent", "purge": true}),
            &[("pkg:installed", DEB)],
        );
        assert!(s.contains(" purge -- oldpkg ||"), "{s}");
        assert_eq!(
            plan_on(
                json!({"name": "oldpkg", "state": "absent"}),
                &[("pkg:installed", DEB)]
            )
            .unwrap(),
            Plan::noop()
        );
    }

    #[test]
    fn cache_refresh_clean_and_autoclean() {
        let fresh = json!({"update_cache": true, "cache_valid_time": 86400});
        assert_eq!(
            plan_on(fresh, &[("pkg:installed", DEB)]).unwrap(),
            Plan::noop()
        );
        let stale = json!({"update_cache": true, "cache_valid_time": 3600});
        assert_eq!(
            step(stale, &[("pkg:installed", DEB)]),
            "apt-get update -q || { echo 'package cache refresh failed' >&2; exit 1; }"
        );
        let alone = build_test(&PACKAGE, json!({"update_cache": true})).unwrap();
        assert!(alone.is_command());
        assert_eq!(
            plan_on(json!({"update_cache": true}), &[("pkg:installed", DEB)])
                .unwrap()
                .changes[0]
                .subject,
            "package cache"
        );
        // dnf and yum refresh, but report it unchanged.
        let dnf = plan_on(json!({"update_cache": true}), &[("pkg:installed", EL)]).unwrap();
        assert!(dnf.changes.is_empty() && dnf.upkeep, "{dnf:?}");
        assert!(dnf.steps[0].starts_with("dnf -q makecache"), "{dnf:?}");
        assert_eq!(dnf.returns["msg"], "Cache updated");
        // cache_valid_time asks for the refresh by itself, as in apt; dnf's
        // cache has no age to compare, so it refreshes before installs only.
        let valid = json!({"name": "curl", "cache_valid_time": 3600});
        assert!(step(valid, &[("pkg:installed", DEB)]).starts_with("apt-get update -q"));
        let valid = json!({"name": "npdemo", "update_cache": true, "cache_valid_time": 60});
        assert_eq!(
            plan_on(valid, &[("pkg:installed", EL)]).unwrap(),
            Plan::noop()
        );
        let s = step(
            json!({"clean": true, "autoclean": true}),
            &[
                ("pkg:installed", DEB),
                ("pkg:cleanup", "clean curl_7.0_amd64.deb\n"),
            ],
        );
        assert!(
            s.contains("apt-get -q autoclean ||") && s.contains("apt-get -q clean ||"),
            "{s}"
        );
        let err = plan_on(json!({"clean": true}), &[("pkg:installed", EL)]).unwrap_err();
        assert!(err.to_string().contains("need apt"), "{err}");
    }

    #[test]
    fn local_deb_files() {
        let answers = [("pkg:installed", DEB), ("pkg:deb:", "curl 7.88.1-10\n")];
        assert_eq!(
            plan_on(json!({"deb": "/tmp/curl.deb"}), &answers).unwrap(),
            Plan::noop()
        );
        let answers = [("pkg:installed", DEB), ("pkg:deb:", "npdemo 1.0\n")];
        let s = step(json!({"deb": "/tmp/npdemo.deb"}), &answers);
        assert!(s.contains(" install -- /tmp/npdemo.deb ||"), "{s}");
        assert!(build_error(&PACKAGE, json!({"deb": "x.deb"})).contains("absolute"));
    }

    #[test]
    fn errors_are_clear() {
        assert!(build_error(&PACKAGE, json!({"name": "$(reboot)"})).contains("not a package name"));
        assert!(build_error(&PACKAGE, json!({"name": "-y"})).contains("not a package name"));
        assert!(build_error(&PACKAGE, json!({"state": "absent"}))
            .contains("missing required parameter 'name'"));
        assert!(
            build_error(&PACKAGE, json!({"name": "x", "state": "newest"}))
                .contains("not a valid state")
        );
        let err = plan_on(json!({"name": "x"}), &[("pkg:installed", "none\n")]).unwrap_err();
        assert!(
            matches!(err, ModuleError::Missing(m) if m.contains("no supported package manager"))
        );
    }

    #[test]
    fn probes_are_shared_and_quoted() {
        let a = build_test(&PACKAGE, json!({"name": "a"})).unwrap();
        let b = build_test(&PACKAGE, json!({"name": ["b", "c"]})).unwrap();
        assert_eq!(
            a.probes(),
            b.probes(),
            "one read of the installed packages per host"
        );
        let p = facts::Available::probe(&["a~b".into()]);
        assert!(p.script.contains("for n in 'a~b'; do"), "{}", p.script);
    }

    #[test]
    fn globs() {
        assert!(glob("1.2*", "1.2.3-1"));
        assert!(glob("*ubuntu*", "8.5.0-2ubuntu10"));
        assert!(!glob("1.2*", "1.3"));
        assert!(glob("1.2", "1.2") && !glob("1.2", "1.2.1"));
    }
}
