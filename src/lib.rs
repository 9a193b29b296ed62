//! nodeprov: agentless, Ansible-shaped provisioning for GPU server fleets.

pub mod diag;
pub mod exec;
pub mod files;
pub mod host_facts;
pub mod modules;
pub mod playbook;
pub mod probe;
pub mod shell;
pub mod template;
pub mod transport;
pub mod yaml;
