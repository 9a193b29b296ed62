//! `copy` and `template`: a file on the host with exactly this content.
//! `template` renders its `src` on the controller with the host's variables;
//! then both write `dest` the same way. With `follow`, a link at `dest` stands
//! for the file it resolves to: the probe resolves it, and that path is
//! written; the link stays. A `src` that is a folder is copied file by file
//! under `dest` (`folder.rs`), each folder made first (with `directory_mode`), as Ansible's
//! copy does.
//!
//! # Example
//!
//! ```yaml
//! - name: Keep the NVIDIA driver's module options
//!   copy:
//!     src: nvidia.conf
//!     dest: /etc/modprobe.d/nvidia.conf
//!     mode: "0644"
//! - name: Render the GPU nodes' sysctl settings
//!   template:
//!     src: sysctl.conf.j2
//!     dest: /etc/sysctl.d/90-gpu-node.conf
//!     owner: root
//!     mode: "0644"
//! ```

mod folder;

use std::sync::Arc;

use folder::FolderCopy;

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, WriteOpts};
use crate::modules::kit::files::{FileFact, FileState, FollowedFile, Kind};
use crate::modules::kit::module::{AnsiblePlugin, ControllerFile, Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, Mode, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const COPY: ModuleSpec = ModuleSpec {
    name: "copy",
    source: file!(),
    aliases: &["ansible.builtin.copy"],
    params: &CopyArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[("remote_src", true)],
        writes_files: true,
        lacks: &[
            ("checksum", "nodeprov compares the content itself"),
            (
                "decrypt",
                "a vaulted src is always decrypted on the controller",
            ),
            (
                "local_follow",
                "a link given as src is always followed on the controller",
            ),
        ],
    }),
    controller_file: Some(ControllerFile {
        param: "src",
        subdir: "files",
        template: false,
    }),
    build: build_copy,
};

pub(crate) const TEMPLATE: ModuleSpec = ModuleSpec {
    name: "template",
    source: file!(),
    aliases: &["ansible.builtin.template"],
    params: &TemplateArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: Some(AnsiblePlugin {
        hands_over: &[],
        writes_files: true,
        lacks: &[
            ("block_start_string", JINJA_SYNTAX),
            ("block_end_string", JINJA_SYNTAX),
            ("comment_start_string", JINJA_SYNTAX),
            ("comment_end_string", JINJA_SYNTAX),
            ("variable_start_string", JINJA_SYNTAX),
            ("variable_end_string", JINJA_SYNTAX),
            ("lstrip_blocks", JINJA_SYNTAX),
            (
                "trim_blocks",
                "templates render with Jinja's trim_blocks, as Ansible's default",
            ),
            (
                "newline_sequence",
                "templates keep the newlines they are written with",
            ),
            ("output_encoding", "templates are written as UTF-8"),
        ],
    }),
    controller_file: Some(ControllerFile {
        param: "src",
        subdir: "templates",
        template: true,
    }),
    build: build_template,
};

/// Why a template's own Jinja syntax settings are refused.
const JINJA_SYNTAX: &str = "templates render with Jinja's default syntax and whitespace settings";

module_params! {
    struct CopyArgs {
        /// a file on the controller, looked up as Ansible does: in `files/` of the role, then the role, the task file's folder, the playbook's folder, and directly in each
        src: Option<String>,
        /// the text to write, instead of `src`
        content: Option<String>,
        /// the file on the host (where `src` is a folder, the folder its files go under)
        dest: String,
        /// where `src` is a folder: the mode of the folders made under `dest` (0755 if not given); folders already there keep theirs
        directory_mode: Option<Mode>,
        ..write: WriteArgs
    }
}

module_params! {
    struct TemplateArgs {
        /// a template on the controller (looked up as `copy` looks up `src`, in `templates/`; also in a `templates/` beside the playbook's folder), rendered there with the host's variables
        src: String,
        /// the file on the host
        dest: String,
        ..write: WriteArgs
    }
}

module_params! {
    /// How `copy` and `template` write `dest`.
    struct WriteArgs {
        /// its mode, such as 0644
        mode: Option<Mode>,
        /// its owner
        owner: Option<String>,
        /// its group
        group: Option<String>,
        /// keep a timestamped copy of the old file
        backup: bool = false,
        /// false: only create a missing file
        force: bool = true,
        /// a command that must accept the new file, named `%s`, before it is installed
        validate: Option<String>,
        /// where `dest` is a link, write the file it points to (the link stays)
        follow: bool = false,
    }
}

struct FileContent {
    dest: String,
    /// Where the file goes when `dest` is a folder: in it, under the
    /// source's name, as Ansible puts it (content has no name to take).
    inside: Option<String>,
    /// Shared by every host when it comes from a `src:` file.
    content: Arc<str>,
    opts: WriteOpts,
    /// `force: no` only creates a missing file.
    force: bool,
    /// `follow: true`: a link at `dest` stands for the file it resolves to.
    follow: bool,
}

fn module(
    p: &Params,
    dest: String,
    src: Option<&std::path::Path>,
    content: Arc<str>,
    w: WriteArgs,
) -> Result<Box<dyn Module>, ParamError> {
    let name = src.and_then(|s| s.file_name()).map(|n| n.to_string_lossy());
    let inside = name.map(|n| format!("{}/{n}", dest.trim_end_matches('/')));
    // A trailing slash says it is a folder whatever the host holds.
    let (dest, inside) = match (dest.ends_with('/'), inside) {
        (true, Some(inner)) => (inner, None),
        (_, inside) => (dest, inside),
    };
    p.destructive_path("dest", &dest)?;
    Ok(Box::new(FileContent {
        dest,
        inside,
        content,
        opts: WriteOpts::read(p, w.mode, w.owner, w.group)?
            .with_backup(w.backup)
            .with_validate(w.validate)
            .map_err(|m| p.error("validate", m))?,
        force: w.force,
        follow: w.follow,
    }))
}

/// The text of `src`, found in the `subdir` folders (`files`, `templates`)
/// of the task's search path.
fn read_src(
    p: &Params,
    subdir: &str,
    src: &str,
) -> Result<(std::path::PathBuf, Arc<str>), ParamError> {
    let path = p.ctx.find_file(subdir, src).ok_or_else(|| {
        p.error(
            "src",
            format!("cannot find '{src}' (searched {subdir}/ and the role and playbook folders)"),
        )
    })?;
    let text = p
        .ctx
        .sources
        .read(&path)
        .map_err(|e| p.error("src", e.to_string()))?;
    Ok((path, text))
}

fn build_copy(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = CopyArgs::read(p)?;
    let (src, content) = match (a.content, a.src) {
        (Some(c), None) => (None, c.into()),
        (None, Some(src)) if p.ctx.find_file("files", &src).is_some_and(|f| f.is_dir()) => {
            return copy_folder(p, &src, a.dest, a.directory_mode, a.write)
        }
        (None, Some(src)) => {
            let (path, text) = read_src(p, "files", &src)?;
            (Some(path), text)
        }
        _ => return Err(p.error("content", "give exactly one of 'src' or 'content'")),
    };
    module(p, a.dest, src.as_deref(), content, a.write)
}

fn copy_folder(
    p: &Params,
    src: &str,
    dest: String,
    directory_mode: Option<Mode>,
    w: WriteArgs,
) -> Result<Box<dyn Module>, ParamError> {
    if w.follow {
        return Err(p.error("follow", "follow is for a file; src is a folder"));
    }
    let found = p.ctx.find_file("files", src).expect("found as a folder");
    let folder_opts = WriteOpts::read(p, directory_mode, w.owner.clone(), w.group.clone())?;
    let opts = WriteOpts::read(p, w.mode, w.owner, w.group)?
        .with_backup(w.backup)
        .with_validate(w.validate)
        .map_err(|m| p.error("validate", m))?;
    let copy = FolderCopy::build(p, src, &found, &dest, opts, folder_opts, w.force)?;
    Ok(Box::new(copy))
}

fn build_template(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = TemplateArgs::read(p)?;
    let (path, text) = read_src(p, "templates", &a.src)?;
    let mut vars = std::borrow::Cow::Borrowed(p.ctx.all_vars());
    // Copied only for a template that reads them; a variable of the
    // play's named `ansible_managed` wins, as in Ansible.
    if text.contains("template_") || text.contains("ansible_managed") {
        let managed = p.ctx.templates.managed();
        if let serde_json::Value::Object(m) = vars.to_mut() {
            let mut added = template_vars(&a.src, &path, &a.dest, managed);
            if m.contains_key("ansible_managed") {
                added.remove("ansible_managed");
            }
            m.extend(added);
        }
    }
    let content = p.ctx.templates.render_str(&text, &vars).map_err(|e| {
        let at = e.line.map(|l| format!(":{l}")).unwrap_or_default();
        p.error(
            "src",
            format!("template {}{at}: {}", path.display(), e.message),
        )
    })?;
    module(p, a.dest, Some(&path), content.into(), a.write)
}

/// The variables Ansible's `template` adds: the controller's name, the
/// source as written and in full, its owner and time, the run's time, the
/// destination, and `ansible_managed` from the configured text (`managed`)
/// with the source's `{file}`, `{host}` and `{uid}` and, as strftime fields,
/// its time in the controller's zone. The other times are the controller's
/// clock, in UTC.
fn template_vars(
    src: &str,
    path: &std::path::Path,
    dest: &str,
    managed: &str,
) -> serde_json::Map<String, serde_json::Value> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok();
    let uid = meta.as_ref().map_or(0, |m| m.uid());
    let owner = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|l| {
                let f: Vec<&str> = l.split(':').collect();
                (f.get(2) == Some(&uid.to_string().as_str())).then(|| f[0].to_string())
            })
        })
        .unwrap_or_else(|| uid.to_string());
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mtime = meta.and_then(|m| m.modified().ok());
    let when = crate::base::time::python_datetime;
    let full = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let host = host.trim();
    let filled = managed
        .replace("{file}", src)
        .replace("{host}", host)
        .replace("{uid}", &owner);
    let stamped = mtime.and_then(|t| crate::base::time::strftime(t, &filled, false));
    serde_json::Map::from_iter([
        ("ansible_managed".into(), stamped.unwrap_or(filled).into()),
        ("template_host".into(), host.into()),
        ("template_path".into(), src.into()),
        (
            "template_fullpath".into(),
            full.display().to_string().into(),
        ),
        ("template_uid".into(), owner.into()),
        (
            "template_mtime".into(),
            mtime.map(when).unwrap_or_default().into(),
        ),
        (
            "template_run_date".into(),
            when(std::time::SystemTime::now()).into(),
        ),
        ("template_destpath".into(), dest.into()),
    ])
}

impl Module for FileContent {
    fn probes(&self) -> Vec<Probe> {
        if self.follow {
            return vec![FollowedFile::probe(&self.dest)];
        }
        let paths = std::iter::once(&self.dest).chain(&self.inside);
        paths.map(|p| FileFact::probe(p)).collect()
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        if self.follow {
            let (resolved, current) = FollowedFile::read(facts, &self.dest)?;
            let content = &self.content;
            let mut plan =
                files::plan_content(&resolved, current.as_ref(), content, &self.opts, self.force)?;
            if !plan.changes.is_empty() {
                plan.effects.push(FollowedFile::invalidate(&self.dest));
            }
            return Ok(plan);
        }
        let mut dest = &self.dest;
        let mut current = FileFact::read(facts, dest)?;
        if let (
            Some(inner),
            Some(FileState {
                kind: Kind::Dir, ..
            }),
        ) = (&self.inside, &current)
        {
            dest = inner;
            current = FileFact::read(facts, dest)?;
        }
        let kept = current.is_some() && !self.force;
        let mut plan = files::plan_content(
            dest,
            current.as_ref(),
            &self.content,
            &self.opts,
            self.force,
        )?;
        plan.returns.insert("dest".into(), dest.clone().into());
        let after = match kept {
            true => current,
            false => Some(files::written_state(
                current.as_ref(),
                &self.content,
                &self.opts,
            )),
        };
        plan.returns.extend(files::path_info(after.as_ref()));
        if !kept {
            // What the file holds after the task, as Ansible's copy returns it.
            let sum = files::digest_hex(files::Digest::Sha1, self.content.as_bytes());
            plan.returns.insert("checksum".into(), sum.into());
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::FileState;
    use crate::modules::kit::plan::Effect;
    use crate::modules::kit::testing::{build_test_with, file_content, file_facts, settled};

    fn facts_with(path: &str, st: Option<FileState>) -> Facts {
        let mut f = Facts::default();
        f.insert(FileFact::key(path), FileFact::render(&st));
        f
    }

    fn module(content: &str, mode: Option<u32>) -> FileContent {
        FileContent {
            dest: "/etc/x.conf".into(),
            inside: None,
            content: content.into(),
            opts: WriteOpts {
                mode,
                ..WriteOpts::default()
            },
            force: true,
            follow: false,
        }
    }

    #[test]
    fn follow_writes_the_file_a_link_resolves_to() {
        let mut m = module("new\n", None);
        m.follow = true;
        let target = FileState::written("old\n", 0o644, "root", "root");
        let mut facts = Facts::default();
        let resolved = ("/boot/grub2/grub.cfg".to_string(), Some(target));
        facts.insert(
            FollowedFile::key("/etc/x.conf"),
            FollowedFile::render(&resolved),
        );
        assert_eq!(m.probes()[0].key, "file-followed:/etc/x.conf");
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes[0].subject, "/boot/grub2/grub.cfg");
        assert!(plan.steps.iter().all(|s| !s.contains("/etc/x.conf")));
        let parsed = FollowedFile::parse("/etc/x.conf", &FollowedFile::render(&resolved)).unwrap();
        assert_eq!(parsed.0, resolved.0);
    }

    #[test]
    fn a_template_reads_ansibles_template_variables() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("templates")).unwrap();
        let text = "{{ template_path }}|{{ template_destpath }}|{{ template_fullpath }}|{{ template_run_date[:2] }}";
        std::fs::write(dir.path().join("templates/t.j2"), text).unwrap();
        let params = serde_json::json!({"src": "t.j2", "dest": "/etc/t"});
        let search = [dir.path().to_path_buf()];
        let m = build_test_with(&TEMPLATE, params, serde_json::json!({}), &search).unwrap();
        let plan = m.plan(&file_facts("/etc/t", None, 0o644)).unwrap();
        let written = file_content(
            &settled(&file_facts("/etc/t", None, 0o644), &plan),
            "/etc/t",
        );
        let full = dir.path().join("templates/t.j2");
        assert_eq!(written, format!("t.j2|/etc/t|{}|20", full.display()));
    }

    #[test]
    fn ansible_managed_is_the_configured_text_filled_in_for_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.j2");
        std::fs::write(&path, "").unwrap();
        let configured = "Managed: {file} on {host} by {uid}, %Y";
        let vars = template_vars("t.j2", &path, "/etc/t", configured);
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let year = crate::base::time::strftime(mtime, "%Y", false).unwrap();
        let host = vars["template_host"].as_str().unwrap();
        let uid = vars["template_uid"].as_str().unwrap();
        assert_eq!(
            vars["ansible_managed"],
            format!("Managed: t.j2 on {host} by {uid}, {year}")
        );

        // Ansible's default; a variable of that name wins.
        std::fs::create_dir(dir.path().join("templates")).unwrap();
        std::fs::write(dir.path().join("templates/m.j2"), "{{ ansible_managed }}").unwrap();
        let search = [dir.path().to_path_buf()];
        let written = |vars: serde_json::Value| {
            let params = serde_json::json!({"src": "m.j2", "dest": "/etc/t"});
            let m = build_test_with(&TEMPLATE, params, vars, &search).unwrap();
            let facts = file_facts("/etc/t", None, 0o644);
            file_content(&settled(&facts, &m.plan(&facts).unwrap()), "/etc/t")
        };
        assert_eq!(written(serde_json::json!({})), "Ansible managed");
        let own = serde_json::json!({"ansible_managed": "mine"});
        assert_eq!(written(own), "mine");
    }

    #[test]
    fn copy_and_template_share_how_dest_is_written() {
        let write = [
            "mode", "owner", "group", "backup", "force", "validate", "follow",
        ];
        let copy = ["src", "content", "dest", "directory_mode"];
        assert_eq!(COPY.params.names[..4], copy);
        assert_eq!(COPY.params.names[4..], write);
        assert_eq!(COPY.params.required, ["dest"]);
        assert_eq!(TEMPLATE.params.names[..2], ["src", "dest"]);
        assert_eq!(TEMPLATE.params.names[2..], write);
        assert_eq!(TEMPLATE.params.required, ["src", "dest"]);
    }

    #[test]
    fn a_source_copied_to_a_folder_lands_in_it_under_its_own_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("z00_lmod.sh"), "export A=1\n").unwrap();
        let src = dir.path().join("z00_lmod.sh").display().to_string();
        let build = |dest: &str| {
            crate::modules::kit::testing::build_test(
                &COPY,
                serde_json::json!({"src": src, "dest": dest}),
            )
            .unwrap()
        };
        let folder = FileState {
            kind: Kind::Dir,
            content: None,
            ..FileState::written("", 0o755, "root", "root")
        };
        let m = build("/etc/profile.d");
        let keys: Vec<String> = m.probes().into_iter().map(|p| p.key).collect();
        assert_eq!(
            keys,
            [
                FileFact::key("/etc/profile.d"),
                FileFact::key("/etc/profile.d/z00_lmod.sh")
            ]
        );
        let mut facts = facts_with("/etc/profile.d", Some(folder));
        facts.insert(
            FileFact::key("/etc/profile.d/z00_lmod.sh"),
            FileFact::render(&None),
        );
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.changes[0].subject, "/etc/profile.d/z00_lmod.sh");
        // A trailing slash names the folder without asking the host.
        let keys: Vec<String> = build("/etc/profile.d/")
            .probes()
            .into_iter()
            .map(|p| p.key)
            .collect();
        assert_eq!(keys, [FileFact::key("/etc/profile.d/z00_lmod.sh")]);
        // A file where the folder was expected is replaced, as before.
        let plan = m.plan(&facts_with("/etc/profile.d", None)).unwrap();
        assert_eq!(plan.changes[0].subject, "/etc/profile.d");
    }

    #[test]
    fn dest_may_not_be_the_root_or_empty() {
        for dest in ["/", "", "/etc/.."] {
            let err = crate::modules::kit::testing::build_error(
                &COPY,
                serde_json::json!({"dest": dest, "content": "x"}),
            );
            assert!(
                err.contains("refusing to remove or replace"),
                "{dest}: {err}"
            );
        }
    }

    #[test]
    fn noop_when_content_and_mode_match() {
        let st = FileState::written("a\n", 0o644, "root", "root");
        let mut plan = module("a\n", Some(0o644))
            .plan(&facts_with("/etc/x.conf", Some(st)))
            .unwrap();
        let returns = std::mem::take(&mut plan.returns);
        assert_eq!(plan, Plan::noop());
        assert_eq!(
            returns["checksum"], "3f786850e387550fdab836ed7e6dc881de23001b",
            "the sha1 Ansible's copy returns"
        );
        assert_eq!(
            (returns["size"].clone(), returns["state"].clone()),
            (2.into(), "file".into())
        );
    }

    #[test]
    fn missing_file_is_written_with_a_diff_and_predicted() {
        let plan = module("a\n", None)
            .plan(&facts_with("/etc/x.conf", None))
            .unwrap();
        assert_eq!(plan.changes.len(), 1);
        assert!(plan.changes[0].diff.as_ref().unwrap().contains("+a"));
        assert_eq!(plan.steps.len(), 1);
        assert!(matches!(&plan.effects[0], Effect::Predict(k, _) if k == "file:/etc/x.conf"));
    }

    #[test]
    fn mode_only_drift_is_a_chmod_not_a_rewrite() {
        let st = FileState::written("a\n", 0o600, "root", "root");
        let plan = module("a\n", Some(0o644))
            .plan(&facts_with("/etc/x.conf", Some(st)))
            .unwrap();
        assert_eq!(plan.changes[0].subject, "/etc/x.conf mode");
        assert_eq!(plan.changes[0].before.as_deref(), Some("0600"));
        assert!(plan.steps[0].starts_with("chmod 644 /etc/x.conf"));
    }

    #[test]
    fn a_file_over_the_content_limit_is_compared_by_sha256() {
        let big = "x".repeat(files::MAX_CONTENT as usize + 1);
        let on_host = FileState {
            content: None,
            sha256: Some(files::sha256_hex(big.as_bytes())),
            ..FileState::written(&big, 0o644, "root", "root")
        };
        let facts = facts_with("/etc/x.conf", Some(on_host));
        let kept = module(&big, None).plan(&facts).unwrap();
        assert!(kept.changes.is_empty() && kept.steps.is_empty());
        let plan = module(&format!("{big}y"), None).plan(&facts).unwrap();
        assert_eq!(plan.changes[0].before.as_deref(), Some("old content"));
        assert_eq!(plan.changes[0].diff, None, "too large to diff");
    }

    #[test]
    fn hostile_path_is_quoted() {
        let m = FileContent {
            dest: "/tmp/$(reboot) x".into(),
            ..module("a", None)
        };
        let plan = m.plan(&facts_with("/tmp/$(reboot) x", None)).unwrap();
        assert!(
            plan.steps[0].contains("p='/tmp/$(reboot) x'"),
            "{}",
            plan.steps[0]
        );
    }
}
