//! Every module, as playbooks name it. The only file that knows them all;
//! no module knows another.

use crate::modules::kit::module::{AnsiblePlugin, ModuleSpec};
use crate::modules::{
    add_host, apt_key, apt_repository, assemble, assert, async_status, authorized_key, blockinfile,
    command, copy, cuda_env, debug, fetch, file, firewalld, get_url, getent, gpu_smoke, group,
    group_by, ini_file, kernel_blacklist, lineinfile, meta, modprobe, mount, package,
    package_facts, pam_limits, pause, pip, reboot, replace, rpm_key, selinux, service,
    service_facts, set_fact, set_stats, setup, slurp, stat, swapfile, sysctl, timezone, ufw,
    unarchive, uri, user, validate_argument_spec, wait_for_connection, yum_repository,
};

pub fn registry() -> &'static [ModuleSpec] {
    static SPECS: &[ModuleSpec] = &[
        command::COMMAND,
        command::SHELL,
        command::RAW,
        command::SCRIPT,
        async_status::ASYNC_STATUS,
        copy::COPY,
        assemble::ASSEMBLE,
        copy::TEMPLATE,
        fetch::FETCH,
        file::FILE,
        // Named in full: `find` is also this file's lookup.
        crate::modules::find::FIND,
        gpu_smoke::GPU_SMOKE,
        lineinfile::LINEINFILE,
        sysctl::SYSCTL,
        swapfile::SWAPFILE,
        service::SERVICE,
        cuda_env::CUDA_ENV,
        package::PACKAGE,
        package_facts::PACKAGE_FACTS,
        mount::MOUNT,
        stat::STAT,
        debug::DEBUG,
        assert::ASSERT,
        assert::FAIL,
        set_fact::SET_FACT,
        set_fact::INCLUDE_VARS,
        setup::SETUP,
        blockinfile::BLOCKINFILE,
        replace::REPLACE,
        pam_limits::PAM_LIMITS,
        kernel_blacklist::KERNEL_BLACKLIST,
        modprobe::MODPROBE,
        meta::META,
        yum_repository::YUM_REPOSITORY,
        apt_repository::APT_REPOSITORY,
        rpm_key::RPM_KEY,
        apt_key::APT_KEY,
        get_url::GET_URL,
        uri::URI,
        unarchive::UNARCHIVE,
        service_facts::SERVICE_FACTS,
        slurp::SLURP,
        getent::GETENT,
        selinux::SELINUX,
        timezone::TIMEZONE,
        ini_file::INI_FILE,
        ufw::UFW,
        group::GROUP,
        group_by::GROUP_BY,
        add_host::ADD_HOST,
        set_stats::SET_STATS,
        user::USER,
        authorized_key::AUTHORIZED_KEY,
        reboot::REBOOT,
        wait_for_connection::WAIT_FOR_CONNECTION,
        pause::PAUSE,
        firewalld::FIREWALLD,
        pip::PIP,
        validate_argument_spec::VALIDATE_ARGUMENT_SPEC,
    ];
    SPECS
}

/// What the action plugins of Ansible modules nodeprov has no native
/// version of do with a task: those that hand it to their module on the
/// host (Ansible's module then runs in the task's place), by the names a
/// task may give.
pub(crate) fn foreign_plugin(key: &str) -> Option<AnsiblePlugin> {
    const PLUGINS: &[(&str, AnsiblePlugin)] = &[(
        "patch",
        AnsiblePlugin {
            hands_over: &[("remote_src", true)],
            writes_files: false,
            lacks: &[],
        },
    )];
    let short = key.rsplit('.').next().unwrap_or(key);
    let builtin =
        key == short || key.starts_with("ansible.builtin.") || key.starts_with("ansible.posix.");
    PLUGINS
        .iter()
        .find(|(name, _)| builtin && *name == short)
        .map(|(_, p)| *p)
}

/// Whether a task of this module may run as a job (`async` with `poll:
/// 0`): Ansible's action plugins refuse it for these ("does not support
/// async"), where its plain modules, `command`, `shell`, `package`,
/// `service` and `uri` run as one.
pub fn runs_as_job(spec: &ModuleSpec) -> bool {
    const REFUSED: &[&str] = &[
        "add_host",
        "assemble",
        "assert",
        "async_status",
        "copy",
        "debug",
        "fail",
        "fetch",
        "group_by",
        "include_vars",
        "meta",
        "pause",
        "raw",
        "reboot",
        "script",
        "set_fact",
        "set_stats",
        "template",
        "unarchive",
        "validate_argument_spec",
        "wait_for_connection",
    ];
    !REFUSED.contains(&spec.name)
}

/// The spec selected by a task key, if any.
pub(crate) fn find(key: &str) -> Option<&'static ModuleSpec> {
    registry().iter().find(|s| s.names().any(|n| n == key))
}

/// Every key that selects a module, for "did you mean" hints.
pub(crate) fn all_names() -> impl Iterator<Item = &'static str> {
    registry().iter().flat_map(ModuleSpec::names)
}

#[cfg(test)]
mod tests {
    use crate::modules::kit::{fact::RoundTrip, file_meta, files, packages};
    use crate::modules::{
        apt_key, apt_repository, authorized_key, command, cuda_env, file, find, firewalld, get_url,
        getent, group, modprobe, mount, package, pip, rpm_key, selinux, service, service_facts,
        stat, swapfile, sysctl, timezone, ufw, unarchive, uri, user,
    };

    /// Every fact reads back what it renders for predictions, and every
    /// `impl Fact for` in src/modules is among those checked.
    #[test]
    fn every_fact_reads_back_what_it_renders() {
        let mut rt = RoundTrip::default();
        files::fact_samples(&mut rt);
        file_meta::fact_samples(&mut rt);
        packages::fact_samples(&mut rt);
        file::fact_samples(&mut rt);
        find::fact_samples(&mut rt);
        swapfile::fact_samples(&mut rt);
        mount::fact_samples(&mut rt);
        service::fact_samples(&mut rt);
        package::fact_samples(&mut rt);
        cuda_env::fact_samples(&mut rt);
        sysctl::fact_samples(&mut rt);
        modprobe::fact_samples(&mut rt);
        rpm_key::fact_samples(&mut rt);
        apt_key::fact_samples(&mut rt);
        apt_repository::fact_samples(&mut rt);
        get_url::fact_samples(&mut rt);
        uri::fact_samples(&mut rt);
        unarchive::fact_samples(&mut rt);
        service_facts::fact_samples(&mut rt);
        getent::fact_samples(&mut rt);
        selinux::fact_samples(&mut rt);
        timezone::fact_samples(&mut rt);
        ufw::fact_samples(&mut rt);
        group::fact_samples(&mut rt);
        user::fact_samples(&mut rt);
        authorized_key::fact_samples(&mut rt);
        firewalld::fact_samples(&mut rt);
        pip::fact_samples(&mut rt);
        stat::fact_samples(&mut rt);
        command::fact_samples(&mut rt);
        assert!(rt.failures.is_empty(), "{}", rt.failures.join("\n"));
        let declared = declared_facts(std::path::Path::new("src/modules"));
        let checked: Vec<String> = rt.checked.into_iter().collect();
        assert_eq!(declared, checked, "facts declared vs round-tripped");
    }

    fn declared_facts(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(declared_facts(&path));
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.extend(text.lines().filter_map(|l| {
                    let name = l.strip_prefix("impl Fact for ")?.strip_suffix(" {")?;
                    Some(name.to_string())
                }));
            }
        }
        out.sort();
        out
    }
}
