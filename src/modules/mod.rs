//! Modules turn desired state into plans. A module never runs anything: it
//! declares [`Probe`](crate::remote::probe::Probe)s, and [`Module::plan`] is
//! a pure function of their answers that returns the changes and the guarded
//! shell steps that make them.
//!
//! Imports flow one way: `registry` knows every module, each module knows
//! only `kit` and `params`, and those know no module
//! (`tests/module_imports.rs` holds them to it).

pub(crate) mod add_host;
pub(crate) mod ansible_module;
pub(crate) mod apt_key;
pub(crate) mod apt_repository;
pub(crate) mod assemble;
pub(crate) mod assert;
pub(crate) mod async_status;
pub(crate) mod authorized_key;
pub(crate) mod blockinfile;
pub(crate) mod command;
pub(crate) mod copy;
pub(crate) mod cuda_env;
pub(crate) mod debug;
pub(crate) mod fetch;
pub(crate) mod file;
pub(crate) mod find;
pub(crate) mod firewalld;
pub(crate) mod get_url;
pub(crate) mod getent;
pub(crate) mod gpu_smoke;
pub(crate) mod group;
pub(crate) mod group_by;
pub(crate) mod ini_file;
pub(crate) mod kernel_blacklist;
pub(crate) mod kit;
pub(crate) mod lineinfile;
pub(crate) mod meta;
pub(crate) mod modprobe;
pub(crate) mod mount;
pub(crate) mod package;
pub(crate) mod package_facts;
pub(crate) mod pam_limits;
pub(crate) mod params;
pub(crate) mod pause;
pub(crate) mod pip;
pub(crate) mod reboot;
pub(crate) mod registry;
pub(crate) mod replace;
pub(crate) mod rpm_key;
pub(crate) mod selinux;
pub(crate) mod service;
pub(crate) mod service_facts;
pub(crate) mod set_fact;
pub(crate) mod set_stats;
pub(crate) mod setup;
pub(crate) mod slurp;
pub(crate) mod stat;
pub(crate) mod swapfile;
pub(crate) mod sysctl;
pub(crate) mod timezone;
pub(crate) mod ufw;
pub(crate) mod unarchive;
pub(crate) mod uri;
pub(crate) mod user;
pub(crate) mod validate_argument_spec;
pub(crate) mod wait_for_connection;
pub(crate) mod yum_repository;

pub(crate) use kit::connection::{ConnectionAction, Reboot, WaitFor};
pub(crate) use kit::module::Module;
pub use kit::module::{AnsiblePlugin, ControllerFile, ModuleKind, ModuleSpec};
pub(crate) use kit::plan::{key_as, Effect, Facts, ModuleError, Plan};
pub use kit::plan::{Change, InventoryChange};
pub(crate) use params::Params;
pub(crate) use registry::{all_names, find, foreign_plugin};
pub use registry::{registry, runs_as_job};
