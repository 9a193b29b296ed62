//! What the account modules (users, groups, their keys) share.

/// A user or group name as shadow's tools take it: no option look-alike,
/// nothing a colon-separated database could split on.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-$".contains(&b))
}

/// The name of an account that exists already, as chown takes it: a
/// directory service's names (`jdoe@corp.example`, `CORP\jdoe`, `domain
/// users`) included, which useradd would never make, but no option
/// look-alike, nothing chown would split on, and no line break.
pub(crate) fn valid_owner(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('-') && !name.chars().any(|c| c == ':' || c.is_control())
}
