//! The one way nodeprov escalates: sudo, by whichever name Ansible takes.

/// Whether a `become_method` names sudo: `sudo`, or its plugin's full name
/// (`ansible.builtin.sudo`, `ansible.legacy.sudo`), as Ansible resolves it.
pub fn is_sudo(method: &str) -> bool {
    matches!(
        method.trim(),
        "sudo" | "ansible.builtin.sudo" | "ansible.legacy.sudo"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sudo_is_named_short_or_in_full() {
        assert!(
            is_sudo("sudo") && is_sudo("ansible.builtin.sudo") && is_sudo("ansible.legacy.sudo")
        );
        assert!(!is_sudo("su") && !is_sudo("community.general.doas") && !is_sudo("sudo2"));
    }
}
