//! What modules share: file probes and atomic writes, fstab editing.

pub mod files;
pub mod fstab;
