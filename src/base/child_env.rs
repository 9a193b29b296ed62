//! What the controller's own child processes (the ansible-core bridge,
//! inventory and vault password scripts, `-c local` commands) inherit of
//! nodeprov's environment.

use std::process::Command;

/// `cmd` without nodeprov's own `NODEPROV_*` settings: they hold its
/// secrets (the become and SSH passwords, the key passphrase), which are
/// for nodeprov alone, never for a script or a playbook's command.
pub fn without_own_settings(cmd: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.as_encoded_bytes().starts_with(b"NODEPROV_") {
            cmd.env_remove(name);
        }
    }
    cmd
}
