//! `deploy/kubernetes/` without a cluster: the manifests are checked for the
//! structure the API server would insist on and for agreeing with each other
//! (names, mounts, keys, shard counts), the container scripts are run with a
//! stand-in `nodeprov` to see the flags each pod passes, and the example
//! playbook and inventory go through the real `nodeprov validate`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

const BIN: &str = env!("CARGO_BIN_EXE_nodeprov");
const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/kubernetes");

fn json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(r) => r.parse::<f64>().map_or(Value::Null, Value::from),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_string(), json(v)))
                .collect::<Map<_, _>>(),
        ),
        _ => Value::Null,
    }
}

fn load(file: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(Path::new(DIR).join(file)).unwrap();
    let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    docs.iter().map(json).collect()
}

fn all() -> Vec<Value> {
    ["config.yaml", "job-shards.yaml", "job-merge.yaml"]
        .into_iter()
        .flat_map(load)
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn pod(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]
}

fn env(container: &Value, name: &str) -> String {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("no env {name}"))
        .to_string()
}

#[test]
fn every_object_has_a_known_kind_and_a_name() {
    let known = [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "PersistentVolumeClaim"),
        ("batch/v1", "Job"),
    ];
    let docs = all();
    assert_eq!(docs.len(), 5);
    for d in &docs {
        let pair = (
            d["apiVersion"].as_str().unwrap(),
            d["kind"].as_str().unwrap(),
        );
        assert!(known.contains(&pair), "{pair:?}");
        let name = d["metadata"]["name"].as_str().unwrap();
        assert!(
            name.len() <= 63
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{name} is not a DNS label"
        );
    }
}

#[test]
fn jobs_mount_only_what_exists_and_read_keys_that_are_there() {
    let docs = all();
    for job in ["nodeprov-shards", "nodeprov-merge"] {
        let spec = pod(find(&docs, "Job", job));
        // Jobs allow no other restart policy, and podFailurePolicy needs Never.
        assert_eq!(spec["restartPolicy"], "Never", "{job}");
        let volumes = spec["volumes"].as_array().unwrap();
        for c in spec["containers"].as_array().unwrap() {
            let script = c["args"][0].as_str().unwrap();
            for m in c["volumeMounts"].as_array().unwrap() {
                let v = volumes
                    .iter()
                    .find(|v| v["name"] == m["name"])
                    .unwrap_or_else(|| panic!("{job}: no volume {}", m["name"]));
                let mount = m["mountPath"].as_str().unwrap();
                let keys = if let Some(cm) = v["configMap"]["name"].as_str() {
                    find(&docs, "ConfigMap", cm)["data"].clone()
                } else if let Some(s) = v["secret"]["secretName"].as_str() {
                    find(&docs, "Secret", s)["stringData"].clone()
                } else {
                    let claim = v["persistentVolumeClaim"]["claimName"].as_str().unwrap();
                    find(&docs, "PersistentVolumeClaim", claim);
                    continue;
                };
                // Every file the script names under a mount is a key there.
                for word in script.split_whitespace() {
                    if let Some(file) = word.strip_prefix(&format!("{mount}/")) {
                        assert!(keys.get(file).is_some(), "{job}: {mount}/{file} is no key");
                    }
                }
            }
        }
    }
    let claim = find(&docs, "PersistentVolumeClaim", "nodeprov-reports");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteMany");
}

#[test]
fn the_indexed_job_runs_one_pod_per_shard() {
    let docs = all();
    let job = find(&docs, "Job", "nodeprov-shards");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let container = &pod(job)["containers"][0];
    let shards: i64 = env(container, "SHARDS").parse().unwrap();
    assert_eq!(spec["completions"], shards);
    assert_eq!(spec["parallelism"], shards);
    let rule = &spec["podFailurePolicy"]["rules"][0];
    assert_eq!(rule["action"], "FailJob");
    assert_eq!(rule["onExitCodes"]["containerName"], container["name"]);
    assert_eq!(
        env(container, "RUN"),
        env(
            &pod(find(&docs, "Job", "nodeprov-merge"))["containers"][0],
            "RUN"
        ),
        "shards and merge must use one report folder"
    );
}

/// Runs a container's script with `nodeprov` replaced by a stand-in that
/// records its arguments and exits with `code`; returns the script's exit
/// code and the recorded arguments.
fn run_script(container: &Value, index: &str, code: i32) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("nodeprov");
    let log = dir.path().join("args");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"$*\" > '{}'\nexit {code}\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command: Vec<&str> = container["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut cmd = Command::new(command[0]);
    cmd.args(&command[1..])
        .arg(container["args"][0].as_str().unwrap())
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("JOB_COMPLETION_INDEX", index);
    for e in container["env"].as_array().unwrap() {
        cmd.env(e["name"].as_str().unwrap(), e["value"].as_str().unwrap());
    }
    let status = cmd.status().unwrap();
    let args = std::fs::read_to_string(&log).unwrap_or_default();
    (status.code().unwrap(), args.trim().to_string())
}

#[test]
fn pod_index_two_checks_shard_three_and_only_a_config_error_fails_the_pod() {
    let docs = all();
    let container = &pod(find(&docs, "Job", "nodeprov-shards"))["containers"][0];
    let (code, args) = run_script(container, "2", 2);
    assert_eq!(code, 0, "drift is the shard's result, not a failed pod");
    assert_eq!(
        args,
        "check /config/gpu-node.yml -i /config/inventory.ini --shard 3/4 \
         --private-key /ssh/id_ed25519 --known-hosts /ssh/known_hosts \
         --format json --report /reports/fleet-check/shard-3"
    );
    assert_eq!(run_script(container, "0", 6).0, 0);
    assert_eq!(run_script(container, "0", 1).0, 1);

    let merge = &pod(find(&docs, "Job", "nodeprov-merge"))["containers"][0];
    let (code, args) = run_script(merge, "", 2);
    assert_eq!(code, 2, "the merge pod exits with the fleet's code");
    assert!(
        args.starts_with("report merge /reports/fleet-check/shard-")
            && args.ends_with(" --report /reports/fleet-check/fleet"),
        "{args}"
    );
}

#[test]
fn the_example_playbook_and_inventory_validate() {
    let docs = all();
    let data = &find(&docs, "ConfigMap", "nodeprov-config")["data"];
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in data.as_object().unwrap() {
        std::fs::write(dir.path().join(name), text.as_str().unwrap()).unwrap();
    }
    let out = Command::new(BIN)
        .args(["validate", "gpu-node.yml", "-i", "inventory.ini"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
