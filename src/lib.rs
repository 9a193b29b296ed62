//! nodeprov: agentless, Ansible-shaped provisioning for GPU server fleets.
//!
//! The folders follow the data: `load` reads playbooks and inventories,
//! `exec` resolves them per host and runs probe → plan → apply → verify with
//! `modules` planning and `remote` talking to hosts, `report` renders the
//! outcome; `smoke` is the GPU validation; `cli`/`commands` are the edge.
//! `base` is the ground floor they all stand on (input files, diagnostics,
//! shell quoting), and it imports none of them.

pub mod base;
pub mod cli;
pub mod commands;
pub mod exec;
pub mod load;
pub mod modules;
pub mod pyre;
pub mod remote;
pub mod report;
pub mod smoke;
pub mod template;
