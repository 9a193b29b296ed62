//! Modules turn desired state into plans. A module never runs anything: it
//! declares [`Probe`](crate::remote::probe::Probe)s, and [`Module::plan`] is
//! a pure function of their answers that returns the changes and the guarded
//! shell steps that make them.
//!
//! Imports flow one way: `registry` knows every module, each module knows
//! only `kit` and `params`, and those know no module
//! (`tests/module_imports.rs` holds them to it).

pub mod blockinfile;
pub mod command;
pub mod copy;
pub mod cuda_env;
pub mod file;
pub mod gpu_smoke;
pub mod kernel_blacklist;
pub mod kit;
pub mod lineinfile;
pub mod modprobe;
pub mod mount;
pub mod package;
pub mod pam_limits;
pub mod params;
pub mod registry;
pub mod replace;
pub mod service;
pub mod swapfile;
pub mod sysctl;

pub use kit::module::{BuildFn, Module, ModuleSpec};
pub use kit::plan::{Change, Effect, Facts, ModuleError, Plan};
pub use params::{ParamError, Params};
pub use registry::{all_names, find, registry};
