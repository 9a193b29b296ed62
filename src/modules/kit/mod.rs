//! What modules share: the module contract and its plans, file probes and
//! atomic writes, fstab editing, the installed packages. Nothing here knows a module.

pub(crate) mod account;
pub(crate) mod ansible;
pub(crate) mod connection;
pub(crate) mod fact;
pub(crate) mod file_meta;
pub(crate) mod files;
mod files_joint;
pub(crate) mod fstab;
pub(crate) mod http;
pub(crate) mod module;
pub(crate) mod packages;
pub(crate) mod plan;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod text;
