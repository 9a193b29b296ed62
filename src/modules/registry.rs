//! Every module, as playbooks name it. The only file that knows them all;
//! no module knows another.

use crate::modules::kit::module::ModuleSpec;
use crate::modules::{
    assert, command, copy, cuda_env, debug, file, gpu_smoke, lineinfile, mount, package, service,
    set_fact, stat, swapfile, sysctl,
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
        stat::STAT,
        debug::DEBUG,
        assert::ASSERT,
        assert::FAIL,
        set_fact::SET_FACT,
        set_fact::INCLUDE_VARS,
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
