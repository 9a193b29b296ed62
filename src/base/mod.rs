//! The ground floor: what every layer uses and which uses nothing above
//! it. Reading an input file within its limits (`input`, with
//! `fd_limit`'s word on running out of files), positions and
//! the diagnostics that quote them (`diag`), and quoting for the host's
//! shell (`shell`), text made safe to show (`printable`), how Python sees a
//! JSON value (`python`), what the controller's own child processes
//! inherit (`child_env`), and which `become_method` names sudo
//! (`escalation`).

pub mod child_env;
pub mod diag;
pub mod escalation;
pub mod fd_limit;
pub mod input;
pub mod printable;
pub mod python;
pub mod shell;
pub mod time;
