//! `deploy/kubernetes/` without a cluster: the manifests are checked for the
//! structure the API server would insist on and for agreeing with each other
//! (names, mounts, keys, shard counts), the container scripts are run with a
//! stand-in `nodeprov` to see the flags each pod passes, `run.sh` with a
//! stand-in `kubectl` to see what it applies, and the example playbook and
//! inventory go through the real `nodeprov validate`. Every pod must run
//! locked down: the image's non-root user, no capabilities or privilege
//! escalation, seccomp, a read-only root with writable volumes where
//! nodeprov writes, no service-account token, secrets only from a Secret.

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
    [
        "config.yaml",
        "ssh-secret.yaml",
        "job-shards.yaml",
        "job-merge.yaml",
    ]
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

fn jobs(docs: &[Value]) -> Vec<&Value> {
    let jobs: Vec<&Value> = docs.iter().filter(|d| d["kind"] == "Job").collect();
    assert_eq!(jobs.len(), 2);
    jobs
}

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers"]
        .into_iter()
        .filter_map(|k| spec[k].as_array())
        .flatten()
}

/// The volume mounted at the deepest mount point holding `path`, and whether
/// that mount is read-only.
fn volume_at<'a>(spec: &'a Value, container: &Value, path: &str) -> (&'a Value, bool) {
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            let at = m["mountPath"].as_str().unwrap();
            path == at || path.starts_with(&format!("{at}/"))
        })
        .max_by_key(|m| m["mountPath"].as_str().unwrap().len())
        .unwrap_or_else(|| panic!("nothing is mounted at {path}"));
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    (volume, mount["readOnly"] == true)
}

fn assert_writable(spec: &Value, container: &Value, path: &str) {
    let (volume, read_only) = volume_at(spec, container, path);
    assert!(
        !read_only
            && (volume["emptyDir"].is_object() || volume["persistentVolumeClaim"].is_object()),
        "{path} is not on a writable volume: {volume}"
    );
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
                } else if v["emptyDir"].is_object() {
                    continue;
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

/// The value of `instruction` (`USER`, `ENV HOME=`) in the Dockerfile's
/// final stage, the one the pods run.
fn image_setting(instruction: &str) -> String {
    let text = std::fs::read_to_string(Path::new(DIR).join("Dockerfile")).unwrap();
    let last_stage = text.rsplit("\nFROM ").next().unwrap();
    last_stage
        .lines()
        .find_map(|l| l.strip_prefix(instruction))
        .unwrap_or_else(|| panic!("the final stage sets no {instruction}"))
        .trim()
        .to_string()
}

/// `USER uid:gid` of the image, both numbers.
fn image_user() -> (i64, i64) {
    let user = image_setting("USER ");
    let (uid, gid) = user.split_once(':').expect("USER uid:gid");
    (
        uid.parse().expect("a numeric uid"),
        gid.parse().expect("a numeric gid"),
    )
}

#[test]
fn every_pod_runs_as_the_image_user_without_privileges_or_token() {
    let (uid, gid) = image_user();
    assert_ne!(uid, 0, "the image must not run as root");
    let docs = all();
    for job in jobs(&docs) {
        let name = &job["metadata"]["name"];
        let spec = pod(job);
        assert_eq!(spec["automountServiceAccountToken"], false, "{name}");
        let pod_context = &spec["securityContext"];
        assert_eq!(pod_context["runAsUser"], uid, "{name}");
        assert_eq!(pod_context["runAsGroup"], gid, "{name}");
        // Without it the image user cannot read the root-owned Secret files.
        assert_eq!(pod_context["fsGroup"], gid, "{name}");
        for c in containers(spec) {
            let context = &c["securityContext"];
            // A container's own setting wins over the pod's.
            let effective = |key: &str| {
                if context[key].is_null() {
                    pod_context[key].clone()
                } else {
                    context[key].clone()
                }
            };
            assert_eq!(effective("runAsNonRoot"), true, "{name}");
            assert!(
                [Value::Null, Value::from(uid)].contains(&context["runAsUser"]),
                "{name}"
            );
            assert_eq!(
                effective("seccompProfile")["type"],
                "RuntimeDefault",
                "{name}"
            );
            assert_eq!(context["allowPrivilegeEscalation"], false, "{name}");
            assert!(context["privileged"] != true, "{name}");
            assert_eq!(context["readOnlyRootFilesystem"], true, "{name}");
            assert_eq!(
                context["capabilities"]["drop"],
                serde_json::json!(["ALL"]),
                "{name}"
            );
            assert!(context["capabilities"]["add"].is_null(), "{name}");
        }
    }
}

#[test]
fn with_a_read_only_root_every_pod_writes_only_to_writable_volumes() {
    let docs = all();
    for job in jobs(&docs) {
        let spec = pod(job);
        for c in containers(spec) {
            let tmpdir = c["env"]
                .as_array()
                .and_then(|env| env.iter().find(|e| e["name"] == "TMPDIR"))
                .map_or("/tmp", |e| e["value"].as_str().unwrap());
            assert_writable(spec, c, tmpdir);
            assert_writable(spec, c, &image_setting("ENV HOME="));
            let (_, args) = run_script(c, "0", 0);
            let report = args
                .split_whitespace()
                .skip_while(|w| *w != "--report")
                .nth(1)
                .unwrap_or_else(|| panic!("no --report in {args}"));
            assert_writable(spec, c, report);
        }
    }
}

#[test]
fn ssh_credentials_come_from_a_secret_and_the_config_map_holds_none() {
    let docs = all();
    let spec = pod(find(&docs, "Job", "nodeprov-shards"));
    let container = &spec["containers"][0];
    let (_, args) = run_script(container, "0", 0);
    let words: Vec<&str> = args.split_whitespace().collect();
    for flag in ["--private-key", "--known-hosts"] {
        let at = words.iter().position(|w| *w == flag).unwrap();
        let (volume, read_only) = volume_at(spec, container, words[at + 1]);
        assert!(
            volume["secret"].is_object() && read_only,
            "{flag}: {volume}"
        );
    }
    let data = &find(&docs, "ConfigMap", "nodeprov-config")["data"];
    for (file, text) in data.as_object().unwrap() {
        for secret in [
            "ansible_become_password",
            "ansible_password",
            "ansible_ssh_pass",
            "PRIVATE KEY",
        ] {
            assert!(
                !text.as_str().unwrap().contains(secret),
                "{file} holds {secret}"
            );
        }
    }
}

/// Runs run.sh with a stand-in `kubectl` that records its calls and the
/// manifests applied, and answers that the Secret exists or not, that every
/// Job is complete and that the merge pod exited 0. Returns run.sh's exit
/// code, the calls and the applied objects.
fn run_sh(secret_exists: bool) -> (i32, Vec<String>, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("kubectl");
    std::fs::write(
        &fake,
        "#!/bin/sh\n\
         echo \"$*\" >>\"$LOG/calls\"\n\
         case \"$*\" in\n\
         'get secret '*) exit \"$SECRET_RC\" ;;\n\
         'apply -f -') cat >>\"$LOG/applied\"; echo --- >>\"$LOG/applied\" ;;\n\
         'apply -f '*) cat \"$3\" >>\"$LOG/applied\"; echo --- >>\"$LOG/applied\" ;;\n\
         'get job '*) echo Complete ;;\n\
         'get pods '*) echo nodeprov-merge-1 ;;\n\
         'get pod '*) echo 0 ;;\n\
         esac\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let status = Command::new(Path::new(DIR).join("run.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        .env("LOG", dir.path())
        .env("SECRET_RC", if secret_exists { "0" } else { "1" })
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    let calls = read("calls").lines().map(String::from).collect();
    let applied = YamlLoader::load_from_str(&read("applied")).unwrap();
    let applied = applied
        .iter()
        .map(json)
        .filter(|d| d["kind"].is_string())
        .collect();
    (status.code().unwrap(), calls, applied)
}

#[test]
fn run_sh_never_applies_the_secret_and_stops_without_it() {
    let (code, calls, applied) = run_sh(true);
    assert_eq!(code, 0, "{calls:?}");
    let kinds: Vec<&str> = applied
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["ConfigMap", "PersistentVolumeClaim", "Job", "Job"]);

    let (code, calls, applied) = run_sh(false);
    assert_eq!(code, 1);
    assert_eq!(calls, ["get secret nodeprov-ssh"], "nothing is applied");
    assert!(applied.is_empty());
}
