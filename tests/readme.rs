//! The README documents what the code accepts: every module, each of its
//! keys, and each of its parameters.

use nodeprov::modules::registry;

const README: &str = include_str!("../README.md");

/// The module table's row for `name`, plus the module's own paragraphs
/// (those under a heading or bold lead naming it), where parameters are
/// explained at length.
fn documentation_of(name: &str) -> String {
    let quoted = format!("`{name}`");
    let row = README
        .lines()
        .filter(|l| l.starts_with("| ") && l.split('|').nth(1).is_some_and(|c| c.contains(&quoted)))
        .collect::<Vec<_>>()
        .join("\n");
    let lead = format!("**{quoted}**");
    let section = README
        .split("\n\n")
        .skip_while(|p| !p.starts_with(&lead))
        .take_while(|p| p.starts_with(&lead) || !p.starts_with("**`"))
        .collect::<Vec<_>>()
        .join("\n\n");
    format!("{row}\n{section}")
}

#[test]
fn readme_lists_every_module_key_and_parameter() {
    let mut missing = Vec::new();
    for spec in registry() {
        let doc = documentation_of(spec.name);
        if !doc.contains('|') {
            missing.push(format!("{}: no row in the module table", spec.name));
            continue;
        }
        for key in spec.names().filter(|k| !k.starts_with("ansible.")) {
            if !doc.contains(&format!("`{key}`")) {
                missing.push(format!("{}: key `{key}`", spec.name));
            }
        }
        for param in spec.params {
            let named = |form: String| doc.contains(&form);
            if !named(format!("`{param}`")) && !named(format!("`{param}: ")) {
                missing.push(format!("{}: parameter `{param}`", spec.name));
            }
        }
    }
    assert!(missing.is_empty(), "README lacks:\n{}", missing.join("\n"));
}
