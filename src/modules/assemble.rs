//! `assemble` of fragments on the controller (`remote_src: false`): the
//! files of a folder, in name order, joined as Ansible's action plugin
//! joins them, and written to the host as `copy` writes content. Fragments
//! already on the host (`remote_src`, true by default) are Ansible's
//! plugin's to hand to its module there, which then runs in the task's
//! place.
//!
//! # Example
//!
//! ```yaml
//! - name: Build the Slurm node list from the fragments the project keeps
//!   assemble:
//!     src: slurm.conf.d
//!     dest: /etc/slurm/slurm.conf
//!     remote_src: false
//!     regexp: '\.conf$'
//!     mode: "0644"
//! ```

use std::path::Path;
use std::sync::Arc;

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, WriteOpts};
use crate::modules::kit::module::{AnsiblePlugin, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params};
use crate::pyre::{Flags, Regex};
use crate::remote::probe::Probe;

pub(crate) const ASSEMBLE: ModuleSpec = ModuleSpec {
    name: "assemble",
    source: file!(),
    aliases: &["ansible.builtin.assemble"],
    params: &AssembleArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        // remote_src is true unless given false: fragments on the host.
        hands_over: &[("remote_src", true), ("remote_src", false)],
        writes_files: true,
        lacks: &[],
    }),
    controller_file: None,
    build: build_assemble,
};

module_params! {
    struct AssembleArgs {
        /// a folder on the controller, looked up as copy's src; its files are joined in name order
        src: String,
        /// the file on the host
        dest: String,
        /// text between fragments (escapes such as \n read as Python reads them), each followed by a newline
        delimiter: Option<String>,
        /// only fragments whose name this Python pattern finds
        regexp: Option<String>,
        /// leave out fragments whose name starts with a dot
        ignore_hidden: bool = false,
        /// its mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// a command that must accept the new file, named `%s`, before it is installed
        validate: Option<String>,
        /// vaulted fragments are decrypted on the controller (false is not supported)
        decrypt: bool = true,
    }
}

struct Assembled {
    dest: String,
    content: Arc<str>,
    opts: WriteOpts,
}

fn build_assemble(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = AssembleArgs::read(p)?;
    if !a.decrypt {
        return Err(p.unsupported(
            "decrypt",
            "decrypt: false is not supported by nodeprov: vaulted fragments are always decrypted on the controller",
        ));
    }
    let folder = p
        .ctx
        .find_file("files", &a.src)
        .filter(|f| f.is_dir())
        .ok_or_else(|| {
            p.error(
                "src",
                format!(
                    "cannot find the folder '{}' (searched files/ and the role and playbook folders)",
                    a.src
                ),
            )
        })?;
    let regexp = a
        .regexp
        .as_deref()
        .map(|r| Regex::new(r, Flags::default()).map_err(|e| p.error("regexp", e.to_string())))
        .transpose()?;
    let mut fragments = Vec::new();
    for name in fragment_names(&folder).map_err(|e| p.error("src", e))? {
        let hidden = a.ignore_hidden && name.starts_with('.');
        let picked = match &regexp {
            Some(re) => re
                .is_match(&name)
                .map_err(|e| p.error("regexp", e.to_string()))?,
            None => true,
        };
        if picked && !hidden {
            let text = p
                .ctx
                .sources
                .read(&folder.join(&name))
                .map_err(|e| p.error("src", e.to_string()))?;
            fragments.push(text);
        }
    }
    p.destructive_path("dest", &a.dest)?;
    Ok(Box::new(Assembled {
        dest: a.dest,
        content: join(&fragments, a.delimiter.as_deref()).into(),
        opts: WriteOpts::read(p, a.mode, a.owner, a.group)?
            .with_backup(a.backup)
            .with_validate(a.validate)
            .map_err(|m| p.error("validate", m))?,
    }))
}

/// The names of the regular files in `folder`, in Python's sorted order
/// (by code point).
fn fragment_names(folder: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", folder.display()))?;
        // A link counts as the file it names, as os.path.isfile sees it.
        if entry.path().is_file() {
            let name = entry.file_name();
            let name = name
                .to_str()
                .ok_or_else(|| format!("{}: a fragment name is not UTF-8", folder.display()))?;
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Ansible's `_assemble_from_fragments`: a newline after a fragment that
/// lacks one before the next, and between fragments the delimiter, its
/// escapes decoded, always followed by a newline.
fn join(fragments: &[Arc<str>], delimiter: Option<&str>) -> String {
    let delimiter = delimiter.filter(|d| !d.is_empty()).map(escape_decode);
    let mut out = String::new();
    let mut add_newline = false;
    for (n, fragment) in fragments.iter().enumerate() {
        if add_newline {
            out.push('\n');
        }
        if let Some(d) = delimiter.as_ref().filter(|_| n > 0) {
            out.push_str(d);
            out.push('\n');
        }
        out.push_str(fragment);
        add_newline = !fragment.ends_with('\n');
    }
    out
}

/// Python's `codecs.escape_decode` of text: `\n`, `\t`, `\\`, `\xHH`,
/// octal and the other single-letter escapes; any other backslash stays.
fn escape_decode(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(next) = chars.next() else {
            out.push('\\');
            break;
        };
        match next {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' => out.push(next),
            '\n' => {}
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                match u8::from_str_radix(&hex, 16) {
                    Ok(b) => out.push(char::from(b)),
                    Err(_) => out.push_str(&format!("\\x{hex}")),
                }
            }
            '0'..='7' => {
                let mut digits = String::from(next);
                while digits.len() < 3 {
                    match chars.peek() {
                        Some(d @ '0'..='7') => {
                            digits.push(*d);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                let code = u32::from_str_radix(&digits, 8).unwrap_or(0) & 0xff;
                out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

impl Module for Assembled {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.dest)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let current = FileFact::read(facts, &self.dest)?;
        let mut plan = files::plan_content(
            &self.dest,
            current.as_ref(),
            &self.content,
            &self.opts,
            true,
        )?;
        // As Ansible's module returns the file it assembled.
        let after = files::written_state(current.as_ref(), &self.content, &self.opts);
        let sum = files::digest_hex(files::Digest::Sha1, self.content.as_bytes());
        plan.returns.insert("dest".into(), self.dest.clone().into());
        plan.returns.insert("checksum".into(), sum.into());
        plan.returns.insert("msg".into(), "OK".into());
        plan.returns.extend(files::path_info(Some(&after)));
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_result_describes_the_assembled_file_as_ansible_does() {
        use crate::modules::kit::testing::file_facts;
        let m = Assembled {
            dest: "/etc/joined".into(),
            content: "a\nb\n".into(),
            opts: WriteOpts::default(),
        };
        let plan = m.plan(&file_facts("/etc/joined", None, 0o644)).unwrap();
        let r = serde_json::Value::Object(plan.returns);
        assert_eq!(
            (&r["state"], &r["mode"], &r["size"], &r["dest"], &r["msg"]),
            (
                &"file".into(),
                &"0644".into(),
                &4.into(),
                &"/etc/joined".into(),
                &"OK".into()
            )
        );
        assert_eq!(r["checksum"], "05dec960e24d918b8a73a1c53bcbbaac2ee5c2e0");
    }

    #[test]
    fn fragments_join_as_ansibles_plugin_joins_them() {
        let parts: Vec<Arc<str>> = vec!["a\n".into(), "b".into(), "c\n".into()];
        assert_eq!(join(&parts, None), "a\nb\nc\n");
        assert_eq!(join(&parts, Some("#---")), "a\n#---\nb\n#---\nc\n");
        assert_eq!(
            join(&parts, Some("\\n# next\\n")),
            "a\n\n# next\n\nb\n\n# next\n\nc\n"
        );
        let empty: Vec<Arc<str>> = vec!["".into(), "x".into()];
        assert_eq!(join(&empty, Some("-")), "\n-\nx");
        assert_eq!(escape_decode(r"\x41\101\q\\"), "AA\\q\\");
    }
}
