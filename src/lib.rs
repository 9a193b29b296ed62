//! nodeprov: agentless, Ansible-shaped provisioning for GPU server fleets.

pub mod diag;
pub mod probe;
pub mod shell;
pub mod smoke;
pub mod transport;
pub mod yaml;
