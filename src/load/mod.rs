//! Loading: files read once, parsed with positions, checked before any host
//! is touched.

pub mod ansible_cfg;
pub mod ansible_core;
pub mod collections;
#[cfg(test)]
pub(crate) mod fuzz;
pub mod inventory;
pub mod keywords;
pub(crate) mod kv;
pub mod playbook;
pub mod roles;
pub mod tasks;
pub mod validate;
pub mod vault;
pub mod yaml;
