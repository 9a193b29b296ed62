//! The one way nodeprov escalates: sudo, by whichever name Ansible takes.

/// Whether a `become_method` names sudo: `sudo`, or its plugin's full name
/// (`ansible.builtin.sudo`, `ansible.legacy.sudo`), as Ansible resolves it.
pub fn is_sudo(method: &str) -> bool {
    matches!(
        method.trim(),
        "sudo" | "ansible.builtin.sudo" | "ansible.legacy.sudo"
    )
}

/// Whether whoever runs sudo answers its password prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// On sudo's stdin (`-S`), as the SSH transport does.
    Answered,
    /// Never: sudo must fail rather than ask (`-n`).
    Refused,
}

/// sudo's options: `become_flags` as given (nodeprov's `-H` where none is),
/// with `-S` where the prompt is answered, and `-n` only where it is not:
/// Ansible's sudo plugin leaves `-n` out when it has a password to give.
pub fn sudo_options(flags: Option<&str>, prompt: Prompt) -> Vec<String> {
    let given = flags.map_or_else(|| vec!["-H".to_string()], crate::base::shell::split);
    let short = |o: &str| o.starts_with('-') && !o.starts_with("--");
    let mut options: Vec<String> = given
        .into_iter()
        .filter_map(|o| match o.as_str() {
            "-n" | "--non-interactive" | "-S" | "--stdin" => None,
            // `-Hn`, `-SH` and the like: the other short options alone.
            s if short(s) && s[1..].contains(['n', 'S']) => {
                Some(s.replace(['n', 'S'], "")).filter(|s| s != "-")
            }
            _ => Some(o),
        })
        .collect();
    options.push(match prompt {
        Prompt::Answered => "-S".into(),
        Prompt::Refused => "-n".into(),
    });
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn become_flags_keep_their_options_and_the_prompt_is_handled_once() {
        assert_eq!(sudo_options(None, Prompt::Answered), ["-H", "-S"]);
        assert_eq!(
            sudo_options(Some("-H -S -n"), Prompt::Answered),
            ["-H", "-S"]
        );
        assert_eq!(sudo_options(Some("-i"), Prompt::Answered), ["-i", "-S"]);
        assert_eq!(
            sudo_options(Some("-HSn -E"), Prompt::Refused),
            ["-H", "-E", "-n"]
        );
        assert_eq!(
            sudo_options(Some("--preserve-env=PATH -n"), Prompt::Refused),
            ["--preserve-env=PATH", "-n"]
        );
    }

    #[test]
    fn sudo_is_named_short_or_in_full() {
        assert!(
            is_sudo("sudo") && is_sudo("ansible.builtin.sudo") && is_sudo("ansible.legacy.sudo")
        );
        assert!(!is_sudo("su") && !is_sudo("community.general.doas") && !is_sudo("sudo2"));
    }
}
