//! The shell a package plan runs: each command guarded, so the first
//! failure stops the step with a message naming what failed.

use super::{Action, Package};
use crate::base::shell::quote;
use crate::modules::kit::packages::Manager;

fn guarded(cmd: &str, what: &str) -> String {
    format!("{cmd} || {{ echo {} >&2; exit 1; }}", quote(what))
}

fn args(names: &[&str]) -> String {
    names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(" ")
}

/// The commands for `actions`, in order: refresh, install, upgrade,
/// remove, then cleanup.
pub(super) fn script(p: &Package, manager: Manager, refresh: bool, actions: &[Action]) -> String {
    let pick = |f: fn(&Action) -> Option<&str>| actions.iter().filter_map(f).collect::<Vec<_>>();
    let install = pick(|a| match a {
        Action::Install(n) => Some(n),
        _ => None,
    });
    let upgrade = pick(|a| match a {
        Action::Upgrade(n) => Some(n),
        _ => None,
    });
    let remove = pick(|a| match a {
        Action::Remove(n) => Some(n),
        _ => None,
    });
    let mut lines = Vec::new();
    match manager {
        Manager::Apt => apt(
            p,
            refresh,
            &install,
            !upgrade.is_empty(),
            &remove,
            &mut lines,
        ),
        Manager::Dnf | Manager::Yum => {
            rpm(p, manager, refresh, &install, &upgrade, &remove, &mut lines)
        }
    }
    lines.join("\n")
}

fn apt(
    p: &Package,
    refresh: bool,
    install: &[&str],
    upgrade: bool,
    remove: &[&str],
    lines: &mut Vec<String>,
) {
    const GET: &str = "DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold";
    if refresh {
        lines.push(guarded("apt-get update -q", "package cache refresh failed"));
    }
    if !install.is_empty() {
        let recommends = match p.install_recommends {
            Some(true) => " --install-recommends",
            Some(false) => " --no-install-recommends",
            None => "",
        };
        let options: String = p.apt_options.iter().map(|o| format!(" {o}")).collect();
        lines.push(guarded(
            &format!("{GET}{recommends}{options} install -- {}", args(install)),
            &format!("package installation failed for: {}", install.join(" ")),
        ));
    }
    if upgrade {
        let options: String = p.apt_options.iter().map(|o| format!(" {o}")).collect();
        lines.push(guarded(
            &format!("{GET}{options} upgrade --with-new-pkgs"),
            "package upgrade failed",
        ));
    }
    if !remove.is_empty() {
        let verb = if p.purge { "purge" } else { "remove" };
        lines.push(guarded(
            &format!("{GET} {verb} -- {}", args(remove)),
            &format!("package removal failed for: {}", remove.join(" ")),
        ));
    }
    if p.autoremove {
        let purge = if p.purge { " --purge" } else { "" };
        lines.push(guarded(
            &format!("{GET}{purge} autoremove"),
            "autoremove failed",
        ));
    }
    if p.autoclean {
        lines.push(guarded("apt-get -q autoclean", "autoclean failed"));
    }
    if p.clean {
        lines.push(guarded("apt-get -q clean", "clean failed"));
    }
}

fn rpm(
    p: &Package,
    manager: Manager,
    refresh: bool,
    install: &[&str],
    upgrade: &[&str],
    remove: &[&str],
    lines: &mut Vec<String>,
) {
    let m = manager.name();
    let opts: String = p
        .rpm_options
        .iter()
        .map(|o| format!(" {}", quote(o)))
        .collect();
    if refresh {
        lines.push(guarded(
            &format!("{m} -q{opts} makecache"),
            "package cache refresh failed",
        ));
    }
    for (verb, names, what) in [
        ("install", install, "installation"),
        ("upgrade", upgrade, "upgrade"),
        ("remove", remove, "removal"),
    ] {
        if !names.is_empty() {
            lines.push(guarded(
                &format!("{m} -y{opts} {verb} -- {}", args(names)),
                &format!("package {what} failed for: {}", names.join(" ")),
            ));
        }
    }
    if p.autoremove {
        lines.push(guarded(
            &format!("{m} -y{opts} autoremove"),
            "autoremove failed",
        ));
    }
}
