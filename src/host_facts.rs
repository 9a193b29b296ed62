//! The facts a play gathers (`gather_facts`), as Ansible's `ansible_*`
//! variables, read by one probe in the same batch as the tasks' probes.

use serde_json::{json, Map, Value};

use crate::probe::{Probe, ProbeResult};

pub const KEY: &str = "host:facts";

pub fn probe() -> Probe {
    Probe::new(
        KEY,
        r#"echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "kernel=$(uname -r)"
echo "arch=$(uname -m)"
echo "user=$(id -un)"
[ -d /run/systemd/system ] && echo "systemd=1" || echo "systemd=0"
echo "nproc=$(nproc 2>/dev/null || echo 0)"
awk '/^MemTotal:/ {print "memtotal_kb=" $2} /^SwapTotal:/ {print "swaptotal_kb=" $2}' /proc/meminfo 2>/dev/null
[ -r /etc/os-release ] && sed -n 's/^\(ID\|ID_LIKE\|VERSION_ID\|NAME\|PRETTY_NAME\)=/os_\1=/p' /etc/os-release
if [ -r /sys/fs/selinux/enforce ]; then
  [ "$(cat /sys/fs/selinux/enforce)" = 1 ] && echo "selinux=enforcing" || echo "selinux=permissive"
else echo "selinux=disabled"; fi
echo "rootfs=$(stat -f -c %T / 2>/dev/null)"
[ -r /etc/tuned/active_profile ] && echo "tuned=$(cat /etc/tuned/active_profile)"
smi=$(command -v nvidia-smi || { [ -x /usr/bin/nvidia-smi ] && echo /usr/bin/nvidia-smi; })
if [ -n "$smi" ]; then
  echo "gpu_driver=$("$smi" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "gpu_count=$("$smi" -L 2>/dev/null | grep -c '^GPU ')"
fi
true"#,
    )
}

/// Gathers facts in one round trip (for `nodeprov facts`).
pub fn gather(
    t: &mut dyn crate::transport::Transport,
) -> Result<Map<String, Value>, crate::transport::TransportError> {
    let p = probe();
    let token = "facts";
    let script = crate::transport::Script {
        purpose: crate::transport::Purpose::Probe,
        body: crate::probe::build_script(token, &[(p.key.clone(), p.script)], false, &[]),
        become_user: None,
    };
    let out = t.run(&script)?;
    let frames = crate::probe::parse_frames(token, &out.stdout, std::slice::from_ref(&p.key))
        .map_err(|e| crate::transport::TransportError::Io(e.0))?;
    Ok(frames.get(KEY).map(parse).unwrap_or_default())
}

/// Turns the probe's `key=value` lines into `ansible_*` variables.
pub fn parse(r: &ProbeResult) -> Map<String, Value> {
    let kv: std::collections::HashMap<&str, String> = r
        .stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k, v.trim_matches('"').to_string()))
        .collect();
    let get = |k: &str| kv.get(k).cloned().unwrap_or_default();
    let id = get("os_ID");
    let like = get("os_ID_LIKE");
    let version = get("os_VERSION_ID");
    let hostname = get("hostname");
    let num = |k: &str| get(k).parse::<u64>().unwrap_or(0);
    let facts = json!({
        "ansible_hostname": hostname.split('.').next().unwrap_or_default(),
        "ansible_fqdn": hostname,
        "ansible_kernel": get("kernel"),
        "ansible_architecture": get("arch"),
        "ansible_user_id": get("user"),
        "ansible_service_mgr": if get("systemd") == "1" { "systemd" } else { "other" },
        "ansible_processor_vcpus": num("nproc"),
        "ansible_memtotal_mb": num("memtotal_kb") / 1024,
        "ansible_distribution": get("os_NAME"),
        "ansible_distribution_version": version,
        "ansible_distribution_major_version": version.split('.').next().unwrap_or_default(),
        "ansible_os_family": os_family(&id, &like),
        "ansible_swaptotal_mb": num("swaptotal_kb") / 1024,
        "ansible_selinux": selinux(&get("selinux")),
        "nodeprov_root_fstype": get("rootfs"),
        "nodeprov_tuned_profile": kv.get("tuned").cloned(),
        "nodeprov_gpu": {
            "present": kv.contains_key("gpu_driver") && num("gpu_count") > 0,
            "count": num("gpu_count"),
            "driver": kv.get("gpu_driver").filter(|d| !d.is_empty()).cloned(),
        },
    });
    match facts {
        Value::Object(m) => m,
        _ => unreachable!("built as an object"),
    }
}

/// Ansible's shape: `{status: disabled}` or `{status: enabled, mode: …}`.
fn selinux(mode: &str) -> Value {
    match mode {
        "enforcing" | "permissive" => json!({"status": "enabled", "mode": mode}),
        _ => json!({"status": "disabled"}),
    }
}

/// Ansible's family names for the distributions GPU fleets run.
fn os_family(id: &str, like: &str) -> &'static str {
    let all = format!("{id} {like}");
    if ["rhel", "centos", "fedora", "rocky", "almalinux"]
        .iter()
        .any(|d| all.contains(d))
    {
        "RedHat"
    } else if ["debian", "ubuntu"].iter().any(|d| all.contains(d)) {
        "Debian"
    } else if all.contains("suse") {
        "Suse"
    } else {
        "Linux"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocky_and_ubuntu() {
        let r = ProbeResult::ok("hostname=gpu-01.lab\nkernel=5.14\narch=x86_64\nuser=root\nsystemd=1\nnproc=64\nmemtotal_kb=2097152\nos_NAME=\"Rocky Linux\"\nos_ID=\"rocky\"\nos_ID_LIKE=\"rhel centos fedora\"\nos_VERSION_ID=\"9.4\"\n");
        let f = parse(&r);
        assert_eq!(f["ansible_hostname"], "gpu-01");
        assert_eq!(f["ansible_os_family"], "RedHat");
        assert_eq!(f["ansible_distribution_major_version"], "9");
        assert_eq!(f["ansible_memtotal_mb"], 2048);
        assert_eq!(f["ansible_service_mgr"], "systemd");
        assert_eq!(f["ansible_selinux"], json!({"status": "disabled"}));
        assert_eq!(f["nodeprov_gpu"]["present"], false);
        let gpu = parse(&ProbeResult::ok(
            "selinux=enforcing\nrootfs=xfs\ntuned=throughput-performance\nswaptotal_kb=8388608\ngpu_driver=580.159.04\ngpu_count=8\n",
        ));
        assert_eq!(gpu["ansible_selinux"]["mode"], "enforcing");
        assert_eq!(gpu["nodeprov_root_fstype"], "xfs");
        assert_eq!(gpu["nodeprov_tuned_profile"], "throughput-performance");
        assert_eq!(gpu["ansible_swaptotal_mb"], 8192);
        assert_eq!(
            gpu["nodeprov_gpu"],
            json!({"present": true, "count": 8, "driver": "580.159.04"})
        );
        let u = parse(&ProbeResult::ok(
            "os_ID=ubuntu\nos_ID_LIKE=debian\nsystemd=0\n",
        ));
        assert_eq!(u["ansible_os_family"], "Debian");
        assert_eq!(u["ansible_service_mgr"], "other");
    }
}
