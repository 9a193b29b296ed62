//! What modules share: the module contract and its plans, file probes and
//! atomic writes, fstab editing. Nothing here knows a module.

pub mod fact;
pub mod files;
pub mod fstab;
pub mod module;
pub mod plan;
#[cfg(test)]
pub mod testing;
