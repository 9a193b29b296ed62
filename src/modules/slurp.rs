//! `slurp`: a file's content from the host, base64-encoded, for
//! `register:`, as `content` (base64), `encoding` and `source`. Read from the same file fact the file modules write, so a
//! file an earlier task of the run writes reads as written.
//!
//! # Example
//!
//! ```yaml
//! - name: Read the node's Slurm GRES file
//!   slurp:
//!     src: /etc/slurm/gres.conf
//!   register: gres
//! - name: Show it
//!   debug:
//!     msg: "{{ gres.content | b64decode }}"
//! ```

use base64::Engine;
use serde_json::json;

use crate::modules::kit::fact::Fact;
use crate::modules::kit::files::{FileFact, Kind, MAX_CONTENT};
use crate::modules::kit::module::{Module, ModuleKind, ModuleSpec};
use crate::modules::kit::plan::{Facts, ModuleError, Plan};
use crate::modules::params::{module_params, ParamError, Params};
use crate::remote::probe::Probe;

pub(crate) const SLURP: ModuleSpec = ModuleSpec {
    name: "slurp",
    source: file!(),
    aliases: &["ansible.builtin.slurp"],
    params: &SlurpArgs::SPEC,
    free_form: None,
    kind: ModuleKind::State,
    plugin: None,
    controller_file: None,
    build,
};

module_params! {
    struct SlurpArgs {
        /// the file on the host (up to 1 MiB, any bytes)
        #[aliases("path")]
        src: String,
    }
}

struct Slurp {
    src: String,
}

fn build(p: &Params) -> Result<Box<dyn Module>, ParamError> {
    let a = SlurpArgs::read(p)?;
    Ok(Box::new(Slurp { src: a.src }))
}

impl Module for Slurp {
    fn probes(&self) -> Vec<Probe> {
        vec![FileFact::probe(&self.src)]
    }

    fn plan(&self, facts: &Facts) -> Result<Plan, ModuleError> {
        let st = FileFact::read(facts, &self.src)?
            .ok_or_else(|| ModuleError::Absent(format!("file not found: {}", self.src)))?;
        if st.kind == Kind::Dir {
            return Err(ModuleError::Refused(format!(
                "source is a directory and must be a file: {}",
                self.src
            )));
        }
        let content = st.data().ok_or_else(|| {
            ModuleError::Unsupported(format!(
                "{} is not a regular file of at most {MAX_CONTENT} bytes",
                self.src
            ))
        })?;
        let mut plan = Plan::noop();
        let encoded = base64::engine::general_purpose::STANDARD.encode(content);
        for (k, v) in [
            ("content", json!(encoded)),
            ("encoding", json!("base64")),
            ("source", json!(self.src)),
        ] {
            plan.returns.insert(k.into(), v);
        }
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::kit::testing::{build_test, facts_of, file_facts};

    #[test]
    fn content_is_returned_base64_encoded() {
        let m = build_test(&SLURP, json!({"src": "/etc/resolv.conf"})).unwrap();
        assert_eq!(m.probes(), [FileFact::probe("/etc/resolv.conf")]);
        let facts = file_facts("/etc/resolv.conf", Some("nameserver 10.0.0.1\n"), 0o644);
        let plan = m.plan(&facts).unwrap();
        assert_eq!(plan.returns["content"], "bmFtZXNlcnZlciAxMC4wLjAuMQo=");
        assert_eq!(plan.returns["encoding"], "base64");
        assert_eq!(plan.returns["source"], "/etc/resolv.conf");
        let absent = facts_of(&[(&FileFact::key("/etc/resolv.conf"), "absent\n")]);
        assert!(matches!(m.plan(&absent), Err(ModuleError::Absent(_))));
    }
}
