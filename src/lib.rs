//! nodeprov: agentless, Ansible-shaped provisioning for GPU server fleets.

pub mod cli;
pub mod commands;
pub mod connect;
pub mod diag;
pub mod exec;
pub mod files;
pub mod fstab;
#[cfg(test)]
mod fuzz;
pub mod host_facts;
pub mod input;
pub mod inventory;
pub mod modules;
pub mod playbook;
pub mod probe;
pub mod report;
pub mod shell;
pub mod smoke;
pub mod template;
pub mod transport;
pub mod validate;
pub mod yaml;
