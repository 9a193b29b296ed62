//! `stat`: a path's type, mode, owner, size and checksum, returned for
//! `register:`. Read from the same file fact the file modules write, so a
//! path an earlier task creates reads as created.

use serde_json::{json, Map, Value};

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{digest_hex, Digest, FileFact, FileState, Kind};
use crate::modules::kit::module::{Module, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{choices, module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub const STAT: ModuleSpec = ModuleSpec {
    name: "stat",
    aliases: &["ansible.builtin.stat"],
    params: &StatArgs::SPEC,
    free_form: None,
    build,
};

choices! {
    enum Algorithm {
        Sha1 = "sha1",
        Sha256 = "sha256",
        Md5 = "md5",
    }
}

module_params! {
    struct StatArgs {
        /// the path on the host
        path: String,
        /// return `checksum` of a regular file
        get_checksum: bool = true,
        /// the checksum's algorithm
        checksum_algorithm: Algorithm = Algorithm::Sha1,
        /// accepted; the MIME type is not returned
        get_mime: Option<bool>,
        /// accepted; attributes are not returned
        get_attributes: Option<bool>,
        /// follow a symlink: not supported, a link is described as a link
        follow: bool = false,
    }
}

struct Stat {
    path: String,
    checksum: Option<Algorithm>,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = StatArgs::read(p)?;
    let _ = (a.get_mime, a.get_attributes);
    if a.follow {
        return Err(p.error(
            "follow",
            "follow: true is not supported by nodeprov; stat the link's target path",
        ));
    }
    Ok(Box::new(Stat {
        path: a.path,
        checksum: a.get_checksum.then_some(a.checksum_algorithm),
    }))
}

impl Module for Stat {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.path)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let st = FileFact::read(facts, &self.path)?;
        let mut plan = Plan::noop();
        plan.returns
            .insert("stat".into(), self.describe(st.as_ref()));
        Ok(plan)
    }
}

impl Stat {
    /// Ansible's `stat` dictionary, for what the file fact knows.
    fn describe(&self, st: Option<&FileState>) -> Value {
        let Some(st) = st else {
            return json!({"exists": false});
        };
        let mut d: Map<String, Value> = json!({
            "exists": true,
            "path": self.path,
            "mode": format!("{:04o}", st.mode),
            "isreg": st.kind == Kind::File,
            "isdir": st.kind == Kind::Dir,
            "islnk": st.kind == Kind::Link,
            "pw_name": st.owner,
            "gr_name": st.group,
            "size": st.size,
            "readable": true,
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        if let Some(target) = &st.link_target {
            d.insert("lnk_source".into(), json!(target));
            d.insert("lnk_target".into(), json!(target));
        }
        if let Some(sum) = self.checksum.and_then(|alg| checksum(alg, st)) {
            d.insert("checksum".into(), json!(sum));
        }
        Value::Object(d)
    }
}

/// The checksum Ansible would return: computed from the content the probe
/// read; a file over the content limit has only its SHA-256.
fn checksum(alg: Algorithm, st: &FileState) -> Option<String> {
    let digest = match alg {
        Algorithm::Sha1 => Digest::Sha1,
        Algorithm::Sha256 => Digest::Sha256,
        Algorithm::Md5 => Digest::Md5,
    };
    match (&st.content, &st.sha256) {
        (Some(content), _) => Some(digest_hex(digest, content.as_bytes())),
        (None, Some(sum)) if digest == Digest::Sha256 => Some(sum.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_error, build_test, facts_of};

    fn stat(params: Value, answer: &str) -> Value {
        let m = build_test(&STAT, params).unwrap();
        let facts = facts_of(&[("file:/etc/x", answer)]);
        m.plan(&facts).unwrap().returns["stat"].clone()
    }

    #[test]
    fn describes_a_file_as_ansible_does() {
        let s = stat(json!({"path": "/etc/x"}), "f 644 root root 6\n\n6\nhello\n");
        assert_eq!(s["exists"], true);
        assert_eq!((&s["isreg"], &s["isdir"]), (&json!(true), &json!(false)));
        assert_eq!(s["mode"], "0644");
        assert_eq!(s["pw_name"], "root");
        // sha1("hello\n"), as sha1sum prints it.
        assert_eq!(s["checksum"], "f572d396fae9206628714fb2ce00f72e94f2258f");
        let s = stat(
            json!({"path": "/etc/x", "checksum_algorithm": "sha256"}),
            "f 644 root root 6\n\n6\nhello\n",
        );
        assert_eq!(
            s["checksum"],
            "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        );
        assert_eq!(
            stat(json!({"path": "/etc/x"}), "absent\n"),
            json!({"exists": false})
        );
        let d = stat(
            json!({"path": "/etc/x", "get_checksum": false}),
            "d 755 root root 4096\n\n",
        );
        assert_eq!((&d["isdir"], d.get("checksum")), (&json!(true), None));
        assert!(build_error(&STAT, json!({"path": "/x", "follow": true})).contains("not supported"));
    }
}
