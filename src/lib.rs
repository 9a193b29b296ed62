//! nodeprov: agentless, Ansible-shaped provisioning for GPU server fleets.

pub mod diag;
pub mod inventory;
pub mod probe;
pub mod shell;
pub mod transport;
pub mod yaml;
