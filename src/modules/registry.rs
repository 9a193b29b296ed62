//! Every module, as playbooks name it. The only file that knows them all;
//! no module knows another.

use crate::modules::kit::module::ModuleSpec;
use crate::modules::{
    blockinfile, command, copy, cuda_env, file, gpu_smoke, kernel_blacklist, lineinfile, modprobe,
    mount, package, pam_limits, replace, service, swapfile, sysctl,
};

pub fn registry() -> &'static [ModuleSpec] {
    static SPECS: &[ModuleSpec] = &[
        command::COMMAND,
        command::SHELL,
        copy::COPY,
        copy::TEMPLATE,
        file::FILE,
        gpu_smoke::GPU_SMOKE,
        lineinfile::LINEINFILE,
        sysctl::SYSCTL,
        swapfile::SWAPFILE,
        service::SERVICE,
        cuda_env::CUDA_ENV,
        package::PACKAGE,
        mount::MOUNT,
        blockinfile::BLOCKINFILE,
        replace::REPLACE,
        pam_limits::PAM_LIMITS,
        kernel_blacklist::KERNEL_BLACKLIST,
        modprobe::MODPROBE,
    ];
    SPECS
}

/// The spec selected by a task key, if any.
pub fn find(key: &str) -> Option<&'static ModuleSpec> {
    registry().iter().find(|s| s.names().any(|n| n == key))
}

/// Every key that selects a module, for "did you mean" hints.
pub fn all_names() -> impl Iterator<Item = &'static str> {
    registry().iter().flat_map(ModuleSpec::names)
}
