//! Running a playbook: hosts in rolling batches, each host in its own
//! worker, bounded by `--forks`.

pub mod host;
pub mod result;
pub mod vars;
