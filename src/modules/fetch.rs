//! `fetch`: a file of the host copied to the controller, under
//! `dest/<inventory_hostname>/<src>` (or `dest` itself with `flat`), as
//! Ansible's fetch lays it out. The host's file is read by the probe every
//! file module shares; the controller's copy is planned, written and
//! verified on the controller's own connection, as the controller user,
//! by the same content plan `copy` uses. The folders on the way to it are
//! made, and it is fetched again only when it differs.
//!
//! # Example
//!
//! ```yaml
//! - name: Collect every node's Slurm GRES file for review
//!   fetch:
//!     src: /etc/slurm/gres.conf
//!     dest: collected/
//! - name: Keep the controller's slurm.conf as the reference copy
//!   fetch:
//!     src: /etc/slurm/slurm.conf
//!     dest: reference/slurm.conf
//!     flat: true
//!   when: inventory_hostname == 'slurmctld01'
//! ```

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{self, FileFact, Kind, WriteOpts, MAX_CONTENT};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const FETCH: ModuleSpec = ModuleSpec {
    name: "fetch",
    source: file!(),
    aliases: &["ansible.builtin.fetch"],
    params: &FetchArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct FetchArgs {
        /// the text file on the host (up to 1 MiB)
        src: String,
        /// the folder on the controller (relative: in the playbook's); the file lands in `<dest>/<host>/<src>`
        dest: String,
        /// true: the file lands at `dest` itself (in it, when it ends with `/`)
        flat: bool = false,
        /// false: a missing source is no failure
        fail_on_missing: bool = true,
        /// the copy is compared by content, so it always matches the source
        validate_checksum: bool = true,
    }
}

struct Fetch {
    src: String,
    /// Where the copy goes on the controller.
    local: LocalPath,
    fail_on_missing: bool,
}

/// The controller's copy: the folder `dest` names, and the folders and
/// file below it that fetch lays out (`<host>/<src>`).
#[derive(Clone)]
struct LocalPath {
    root: String,
    below: Vec<String>,
}

impl LocalPath {
    /// `root` without a trailing `/` (or `/` itself).
    fn new(root: &str, below: Vec<String>) -> LocalPath {
        let root = match root.trim_end_matches('/') {
            "" => "/",
            root => root,
        };
        LocalPath {
            root: root.to_string(),
            below,
        }
    }

    fn path(&self) -> String {
        let root = self.root.trim_end_matches('/');
        format!("{root}/{}", self.below.join("/"))
    }
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = FetchArgs::read(p)?;
    // The copy is planned from the source's content: it matches by design.
    let _ = a.validate_checksum;
    // As Ansible's loader finds a relative dest: in the playbook's folder,
    // the last place files are searched.
    let base = match (a.dest.starts_with('/'), p.ctx.search_path.last()) {
        (false, Some(dir)) => {
            let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.clone());
            format!("{}/", dir.display().to_string().trim_end_matches('/'))
        }
        _ => String::new(),
    };
    let name = a.src.rsplit('/').next().unwrap_or_default().to_string();
    let parts = |path: &str| -> Vec<String> {
        path.split('/')
            .filter(|part| !part.is_empty())
            .map(str::to_string)
            .collect()
    };
    let local = match (a.flat, a.dest.ends_with('/')) {
        (true, true) => LocalPath::new(&format!("{base}{}", a.dest), vec![name.clone()]),
        (true, false) => {
            let whole = format!("{base}{}", a.dest);
            let (root, file) = whole.rsplit_once('/').unwrap_or((".", &whole));
            LocalPath::new(root, vec![file.to_string()])
        }
        (false, _) => {
            let host = p
                .ctx
                .var("inventory_hostname")
                .as_str()
                .unwrap_or("localhost");
            let mut below = vec![host.to_string()];
            below.extend(parts(&a.src));
            LocalPath::new(&format!("{base}{}", a.dest), below)
        }
    };
    let climbs = |path: &str| path.split('/').any(|part| part == "..");
    if name.is_empty() || climbs(&a.src) {
        return Err(p.error("src", format!("'{}' names no file to fetch", a.src)));
    }
    if climbs(&local.path()) {
        let why = match climbs(&a.dest) {
            true => format!("'{}' climbs out of its folder with '..'", a.dest),
            false => format!("the host's name '{}' cannot name a folder", local.below[0]),
        };
        return Err(p.error("dest", why));
    }
    Ok(Box::new(Fetch {
        src: a.src,
        local,
        fail_on_missing: a.fail_on_missing,
    }))
}

impl Fetch {
    /// The source's bytes as text, when there is one to copy.
    fn content(&self, facts: &Facts) -> Result<Option<String>, ModuleError> {
        let Some(st) = FileFact::read(facts, &self.src)? else {
            return match self.fail_on_missing {
                true => Err(ModuleError::Absent(format!("file not found: {}", self.src))),
                false => Ok(None),
            };
        };
        if st.kind != Kind::File {
            return Err(ModuleError::Refused(format!(
                "{} is not a regular file",
                self.src
            )));
        }
        match st.content {
            Some(text) => Ok(Some(text)),
            None => Err(ModuleError::Unsupported(format!(
                "{} is not a text file of at most {MAX_CONTENT} bytes",
                self.src
            ))),
        }
    }
}

impl Module for Fetch {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.src)]
    }

    /// On the host nothing changes; what this says is why nothing is
    /// copied (a missing source, a file too large).
    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let mut plan = Plan::noop();
        if self.content(facts)?.is_none() {
            plan.notes
                .push(format!("{} is absent: nothing fetched", self.src));
        }
        Ok(plan)
    }

    fn on_controller(&self, facts: &Facts) -> Option<Box<dyn Module>> {
        let content = self.content(facts).ok()??;
        Some(Box::new(LocalCopy {
            local: self.local.clone(),
            content,
        }))
    }
}

/// The controller's copy of a fetched file.
struct LocalCopy {
    local: LocalPath,
    content: String,
}

impl Module for LocalCopy {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.local.path())]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let path = self.local.path();
        let current = FileFact::read(facts, &path)?;
        let mut plan = files::plan_content(
            &path,
            current.as_ref(),
            &self.content,
            &WriteOpts::default(),
            true,
        )?;
        // What is fetched is often a secret (a MUNGE key): reports say the
        // copy changed, never what it holds, as Ansible's fetch shows no diff.
        for change in &mut plan.changes {
            change.diff = None;
        }
        // Ansible makes the host's folder under dest as it fetches. Each
        // folder from dest down is one nobody else can steer, or the copy
        // (written as the controller user, often root) is refused: a link
        // planted in a shared dest would take it anywhere.
        if !plan.steps.is_empty() {
            let below = &self.local.below;
            let folders: Vec<&str> = below[..below.len() - 1]
                .iter()
                .map(String::as_str)
                .collect();
            plan.steps
                .insert(0, files::trusted_folders(&self.local.root, &folders));
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::files::FileState;

    fn facts(path: &str, st: Option<FileState>) -> Facts {
        let mut f = Facts::default();
        f.insert(FileFact::key(path), FileFact::render(&st));
        f
    }

    fn fetch(fail_on_missing: bool) -> Fetch {
        Fetch {
            src: "/etc/munge/munge.key".into(),
            local: LocalPath {
                root: "/srv/keys/".into(),
                below: ["n1", "etc", "munge", "munge.key"]
                    .map(String::from)
                    .to_vec(),
            },
            fail_on_missing,
        }
    }

    #[test]
    fn the_controller_copy_is_written_where_ansible_lays_it_out() {
        let st = FileState::written("KEY\n", 0o400, "munge", "munge");
        let on_host = facts("/etc/munge/munge.key", Some(st));
        assert_eq!(fetch(true).plan(&on_host).unwrap().changes, []);
        let local = fetch(true)
            .on_controller(&on_host)
            .expect("a copy to write");
        assert_eq!(
            local.probes()[0].key,
            "file:/srv/keys/n1/etc/munge/munge.key"
        );
        let plan = local
            .plan(&facts("/srv/keys/n1/etc/munge/munge.key", None))
            .unwrap();
        assert_eq!(plan.changes[0].subject, "/srv/keys/n1/etc/munge/munge.key");
        assert!(
            plan.steps[0].contains("mkdir -p -- /srv/keys/ || exit 1\nnp_trust /srv/keys/\n"),
            "{}",
            plan.steps[0]
        );
        for folder in ["n1", "etc", "munge"] {
            assert!(plan.steps[0].contains(&format!("np_d=\"$np_d\"/{folder}\n")));
        }
        assert!(!plan.steps[0].contains("munge.key"), "{}", plan.steps[0]);
        assert_eq!(
            plan.changes[0].diff, None,
            "a fetched secret is in no report"
        );
        let same = FileState::written("KEY\n", 0o644, "op", "op");
        let done = local.plan(&facts("/srv/keys/n1/etc/munge/munge.key", Some(same)));
        assert_eq!(done.unwrap().changes, []);
    }

    #[test]
    fn a_missing_source_fails_unless_told_not_to() {
        let absent = facts("/etc/munge/munge.key", None);
        assert!(matches!(
            fetch(true).plan(&absent),
            Err(ModuleError::Absent(_))
        ));
        assert!(fetch(true).on_controller(&absent).is_none());
        let plan = fetch(false).plan(&absent).unwrap();
        assert_eq!(
            plan.notes,
            ["/etc/munge/munge.key is absent: nothing fetched"]
        );
        assert!(fetch(false).on_controller(&absent).is_none());
    }
}
