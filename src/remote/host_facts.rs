//! The facts a play gathers (`gather_facts`), as Ansible's `ansible_*`
//! variables, read by one probe in the same batch as the tasks' probes.

use serde_json::{json, Map, Value};

use crate::remote::probe::{Probe, ProbeResult};

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
while read -r k v _; do echo "mem ${k%:} $v"; done < /proc/meminfo 2>/dev/null
while read -r dev mnt fs opts _; do echo "mount $dev $mnt $fs $opts"; done < /proc/mounts 2>/dev/null
ifc=; gw=
while read -r i dst g _; do [ "$dst" = 00000000 ] && { ifc=$i; gw=$g; break; }; done < /proc/net/route 2>/dev/null
if [ -n "$ifc" ]; then
  echo "route_if=$ifc"; echo "route_gw=$gw"
  ip -4 -o addr show dev "$ifc" 2>/dev/null | while read -r _ _ _ a _; do echo "route_addr=$a"; break; done
fi
for f in product_name sys_vendor product_version; do
  [ -r /sys/class/dmi/id/$f ] && read -r v < /sys/class/dmi/id/$f && echo "dmi_$f=$v"
done
command -v systemd-detect-virt >/dev/null 2>&1 && echo "virt=$(systemd-detect-virt 2>/dev/null)"
[ -e /.dockerenv ] && echo "container=docker"
for f in /etc/ansible/facts.d/*.fact; do
  [ -f "$f" ] || continue
  n=${f##*/}; n=${n%.fact}
  if [ -x "$f" ]; then "$f" 2>/dev/null; else cat "$f"; fi | while IFS= read -r l || [ -n "$l" ]; do echo "local $n $l"; done
done
[ -r /etc/os-release ] && sed -n 's/^\(ID\|ID_LIKE\|VERSION_ID\|VERSION_CODENAME\|NAME\|PRETTY_NAME\)=/os_\1=/p' /etc/os-release
[ -r /etc/debian_version ] && echo "debian_version=$(head -n 1 /etc/debian_version)"
[ -r /etc/redhat-release ] && echo "redhat_release=$(head -n 1 /etc/redhat-release)"
if [ -r /sys/fs/selinux/enforce ]; then
  [ "$(cat /sys/fs/selinux/enforce)" = 1 ] && echo "selinux=enforcing" || echo "selinux=permissive"
else echo "selinux=disabled"; fi
echo "rootfs=$(findmnt -n -o FSTYPE / 2>/dev/null || stat -f -c %T / 2>/dev/null)"
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
    t: &mut dyn crate::remote::Transport,
) -> Result<Map<String, Value>, crate::remote::TransportError> {
    let p = probe();
    let token = "facts";
    let script = crate::remote::Script {
        purpose: crate::remote::Purpose::Probe,
        body: crate::remote::probe::build_script(token, &[(p.key.clone(), p.script)], false, &[]),
        become_user: None,
    };
    let out = t.run(&script)?;
    let frames =
        crate::remote::probe::parse_frames(token, &out.stdout, std::slice::from_ref(&p.key))
            .map_err(|e| crate::remote::TransportError::Io(e.0))?;
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
    let family = os_family(&id, &like);
    let version = distribution_version(&id, &get("os_VERSION_ID"), &kv);
    let major = version.split('.').next().unwrap_or_default().to_string();
    let hostname = get("hostname");
    let num = |k: &str| get(k).parse::<u64>().unwrap_or(0);
    let mem = prefixed(&r.stdout, "mem ");
    let kb = |k: &str| {
        mem.iter()
            .find(|l| l.split_whitespace().next() == Some(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let memtotal_kb = kb("MemTotal").max(num("memtotal_kb"));
    let swaptotal_kb = kb("SwapTotal").max(num("swaptotal_kb"));
    let (virt_type, virt_role) = virtualization(&get("virt"), kv.contains_key("container"));
    let facts = json!({
        "ansible_hostname": hostname.split('.').next().unwrap_or_default(),
        "ansible_nodename": hostname,
        "ansible_system": "Linux",
        "ansible_machine": get("arch"),
        "ansible_memfree_mb": kb("MemFree") / 1024,
        "ansible_memory_mb": memory_mb(&kb),
        "ansible_mounts": mounts(&prefixed(&r.stdout, "mount ")),
        "ansible_default_ipv4": default_ipv4(&kv),
        "ansible_virtualization_type": virt_type,
        "ansible_virtualization_role": virt_role,
        "ansible_product_name": get("dmi_product_name"),
        "ansible_product_version": get("dmi_product_version"),
        "ansible_system_vendor": get("dmi_sys_vendor"),
        "ansible_local": local_facts(&prefixed(&r.stdout, "local ")),
        "ansible_fqdn": hostname,
        "ansible_kernel": get("kernel"),
        "ansible_architecture": get("arch"),
        "ansible_user_id": get("user"),
        "ansible_service_mgr": if get("systemd") == "1" { "systemd" } else { "other" },
        "ansible_processor_vcpus": num("nproc"),
        "ansible_memtotal_mb": memtotal_kb / 1024,
        "ansible_distribution": distribution(&id, &get("os_NAME")),
        "ansible_distribution_version": version,
        "ansible_distribution_major_version": major,
        "ansible_distribution_release": get("os_VERSION_CODENAME"),
        "ansible_os_family": family,
        "ansible_pkg_mgr": pkg_mgr(family, &id, &major),
        "ansible_swaptotal_mb": swaptotal_kb / 1024,
        "ansible_selinux": selinux(&get("selinux")),
        "nodeprov_root_fstype": get("rootfs"),
        "nodeprov_tuned_profile": kv.get("tuned").cloned(),
        "nodeprov_gpu": {
            "present": kv.contains_key("gpu_driver") && num("gpu_count") > 0,
            "count": num("gpu_count"),
            "driver": kv.get("gpu_driver").filter(|d| !d.is_empty()).cloned(),
        },
    });
    let Value::Object(mut facts) = facts else {
        unreachable!("built as an object")
    };
    let namespace = ansible_facts(&facts);
    facts.insert("ansible_facts".into(), Value::Object(namespace));
    facts
}

/// The probe's lines that start with `prefix`, without it.
fn prefixed<'a>(stdout: &'a str, prefix: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .collect()
}

/// Ansible's `memory_mb`: real, swap and the "nocache" view (free plus
/// buffers and page cache), in MiB.
fn memory_mb(kb: &dyn Fn(&str) -> u64) -> Value {
    let mb = |k: &str| kb(k) / 1024;
    let (total, free) = (mb("MemTotal"), mb("MemFree"));
    let cache_free = free + mb("Buffers") + mb("Cached");
    json!({
        "real": {"total": total, "free": free, "used": total.saturating_sub(free)},
        "nocache": {"free": cache_free, "used": total.saturating_sub(cache_free)},
        "swap": {
            "total": mb("SwapTotal"),
            "free": mb("SwapFree"),
            "used": mb("SwapTotal").saturating_sub(mb("SwapFree")),
            "cached": mb("SwapCached"),
        },
    })
}

/// Ansible's `mounts` from /proc/mounts (octal escapes undone); sizes are
/// not gathered: `statvfs` of every mount, NFS included, can hang a probe.
fn mounts(lines: &[&str]) -> Value {
    let rows: Vec<Value> = lines
        .iter()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (device, mount, fstype, options) = (f.next()?, f.next()?, f.next()?, f.next()?);
            Some(json!({
                "device": crate::modules::kit::fstab::unescape(device),
                "mount": crate::modules::kit::fstab::unescape(mount),
                "fstype": fstype,
                "options": options,
            }))
        })
        .collect();
    Value::Array(rows)
}

/// Ansible's `default_ipv4` (interface, address, gateway) from the
/// kernel's routing table; `{}` without a default route.
fn default_ipv4(kv: &std::collections::HashMap<&str, String>) -> Value {
    let Some(interface) = kv.get("route_if") else {
        return json!({});
    };
    let gateway = kv
        .get("route_gw")
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .map(|n| std::net::Ipv4Addr::from(n.to_le_bytes()).to_string());
    let addr = kv
        .get("route_addr")
        .map(|a| a.split('/').collect::<Vec<_>>());
    let mut out = json!({"interface": interface, "alias": interface, "gateway": gateway});
    if let Some(parts) = addr {
        out["address"] = json!(parts[0]);
        if let Some(prefix) = parts.get(1).and_then(|p| p.parse::<u32>().ok()) {
            let mask = u32::MAX.checked_shl(32 - prefix.min(32)).unwrap_or(0);
            out["netmask"] = json!(std::net::Ipv4Addr::from(mask).to_string());
            out["prefix"] = json!(prefix.to_string());
        }
    }
    out
}

/// Ansible's names from `systemd-detect-virt`: a guest is `guest`, a
/// machine that detects nothing is `NA` (Ansible cannot tell host from bare).
fn virtualization(detected: &str, docker: bool) -> (String, String) {
    let kind = match detected {
        _ if docker => "docker",
        "" | "none" => return ("NA".into(), "NA".into()),
        "microsoft" => "VirtualPC",
        "oracle" => "virtualbox",
        other => other,
    };
    (kind.to_string(), "guest".to_string())
}

/// `/etc/ansible/facts.d/<name>.fact`: JSON, or INI sections of `key=value`.
fn local_facts(lines: &[&str]) -> Value {
    let mut files: Vec<(String, Vec<&str>)> = Vec::new();
    for line in lines {
        let (name, text) = line.split_once(' ').unwrap_or((line, ""));
        match files.last_mut() {
            Some((n, body)) if n == name => body.push(text),
            _ => files.push((name.to_string(), vec![text])),
        }
    }
    let facts = files.into_iter().map(|(name, body)| {
        let text = body.join("\n");
        let value = serde_json::from_str(&text).unwrap_or_else(|_| ini_facts(&text));
        (name, value)
    });
    Value::Object(facts.collect())
}

fn ini_facts(text: &str) -> Value {
    let mut out = Map::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_string();
            out.entry(section.clone()).or_insert_with(|| json!({}));
        } else if let Some((k, v)) = line.split_once('=') {
            if let Some(Value::Object(m)) = out.get_mut(&section) {
                m.insert(k.trim().to_string(), json!(v.trim()));
            }
        }
    }
    Value::Object(out)
}

/// Ansible's `ansible_facts` namespace: the same facts without the
/// `ansible_` prefix (`ansible_facts['os_family']`, `ansible_facts.kernel`),
/// which roles written for current Ansible read instead of the variables.
fn ansible_facts(facts: &Map<String, Value>) -> Map<String, Value> {
    facts
        .iter()
        .map(|(k, v)| {
            (
                k.strip_prefix("ansible_").unwrap_or(k).to_string(),
                v.clone(),
            )
        })
        .collect()
}

/// Ansible's names, not os-release's `NAME` ("Debian GNU/Linux", "Rocky
/// Linux"), so `when: ansible_distribution == 'CentOS'` means what it says.
fn distribution(id: &str, name: &str) -> String {
    let known = match id {
        "debian" => "Debian",
        "ubuntu" => "Ubuntu",
        "centos" => "CentOS",
        "rhel" => "RedHat",
        "rocky" => "Rocky",
        "almalinux" => "AlmaLinux",
        "ol" => "OracleLinux",
        "fedora" => "Fedora",
        "amzn" => "Amazon",
        "sles" => "SLES",
        "opensuse-leap" => "openSUSE Leap",
        _ => return name.to_string(),
    };
    known.to_string()
}

/// Ansible's version: Debian's point release from /etc/debian_version
/// ("12.11", where os-release says "12"), and on EL the release file's
/// "7.9" for CentOS 7 (os-release: "7"); elsewhere os-release's VERSION_ID.
fn distribution_version(
    id: &str,
    os_release: &str,
    kv: &std::collections::HashMap<&str, String>,
) -> String {
    let point = |text: Option<&String>| {
        let text = text?;
        let start = text.find(|c: char| c.is_ascii_digit())?;
        let digits: String = text[start..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut parts = digits.split('.').filter(|p| !p.is_empty());
        let major = parts.next()?;
        Some(match parts.next() {
            Some(minor) => format!("{major}.{minor}"),
            None => major.to_string(),
        })
    };
    let from_file = match id {
        "debian" => point(kv.get("debian_version")),
        "centos" => point(kv.get("redhat_release")),
        _ => None,
    };
    from_file
        .filter(|v| v.starts_with(os_release) || os_release.is_empty())
        .unwrap_or_else(|| os_release.to_string())
}

/// The package manager Ansible's `package` module would pick: yum up to EL7,
/// dnf from EL8 and on Fedora.
fn pkg_mgr(family: &str, id: &str, major: &str) -> &'static str {
    let major: u32 = major.parse().unwrap_or(0);
    match family {
        "Debian" => "apt",
        "RedHat" if id == "fedora" || id == "amzn" && major >= 2023 || major >= 8 => "dnf",
        "RedHat" => "yum",
        "Suse" => "zypper",
        _ => "unknown",
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

    #[test]
    fn memory_mounts_route_virtualization_and_local_facts_read_as_ansible_names_them() {
        let f = parse(&ProbeResult::ok(concat!(
            "mem MemTotal 2097152\nmem MemFree 1048576\nmem Buffers 102400\nmem Cached 102400\n",
            "mem SwapTotal 1048576\nmem SwapFree 524288\n",
            "mount /dev/sda1 / xfs rw,relatime 0 0\nmount //srv/share /mnt/my\\040data cifs rw 0 0\n",
            "route_if=eth0\nroute_gw=010200C0\nroute_addr=192.0.2.10/24\n",
            "virt=kvm\ndmi_product_name=PowerEdge XE9680\n",
            "local cluster {\"rack\": \"r12\"}\nlocal site [general]\nlocal site zone = b\n",
        )));
        assert_eq!(f["ansible_memtotal_mb"], 2048);
        assert_eq!(
            f["ansible_memory_mb"]["real"],
            json!({"total": 2048, "free": 1024, "used": 1024})
        );
        assert_eq!(f["ansible_memory_mb"]["nocache"]["free"], 1224);
        assert_eq!(f["ansible_memory_mb"]["swap"]["used"], 512);
        assert_eq!(f["ansible_mounts"][1]["mount"], "/mnt/my data");
        assert_eq!(f["ansible_mounts"][0]["fstype"], "xfs");
        assert_eq!(
            f["ansible_default_ipv4"],
            json!({"interface": "eth0", "alias": "eth0", "gateway": "192.0.2.1",
                   "address": "192.0.2.10", "netmask": "255.255.255.0", "prefix": "24"})
        );
        assert_eq!(
            (
                &f["ansible_virtualization_type"],
                &f["ansible_virtualization_role"]
            ),
            (&json!("kvm"), &json!("guest"))
        );
        assert_eq!(f["ansible_facts"]["product_name"], "PowerEdge XE9680");
        assert_eq!(
            f["ansible_local"],
            json!({"cluster": {"rack": "r12"}, "site": {"general": {"zone": "b"}}})
        );
        let bare = parse(&ProbeResult::ok("virt=none\n"));
        assert_eq!(bare["ansible_virtualization_type"], "NA");
        assert_eq!(bare["ansible_default_ipv4"], json!({}));
    }

    fn os(release: &str) -> Map<String, Value> {
        parse(&ProbeResult::ok(release))
    }

    fn dist(f: &Map<String, Value>) -> [&str; 5] {
        [
            "ansible_distribution",
            "ansible_distribution_version",
            "ansible_distribution_major_version",
            "ansible_os_family",
            "ansible_pkg_mgr",
        ]
        .map(|k| f[k].as_str().unwrap())
    }

    #[test]
    fn the_ansible_facts_namespace_holds_every_fact_without_its_prefix() {
        let f = os(
            "os_ID=rocky\nos_ID_LIKE=\"rhel centos fedora\"\nos_VERSION_ID=\"9.4\"\nkernel=5.14\n",
        );
        let ns = &f["ansible_facts"];
        assert_eq!(ns["os_family"], "RedHat");
        assert_eq!(ns["distribution_major_version"], "9");
        assert_eq!(ns["kernel"], "5.14");
        assert_eq!(ns["nodeprov_gpu"], f["nodeprov_gpu"]);
        assert_eq!(
            ns.as_object().unwrap().len(),
            f.len() - 1,
            "every fact but the namespace itself"
        );
    }

    #[test]
    fn distribution_facts_are_ansibles() {
        // os-release and release-file lines as these distributions ship them.
        let debian = os("os_NAME=\"Debian GNU/Linux\"\nos_ID=debian\nos_VERSION_ID=\"12\"\nos_VERSION_CODENAME=bookworm\ndebian_version=12.11\n");
        assert_eq!(dist(&debian), ["Debian", "12.11", "12", "Debian", "apt"]);
        assert_eq!(debian["ansible_distribution_release"], "bookworm");
        let sid = os("os_ID=debian\nos_VERSION_ID=\"13\"\ndebian_version=trixie/sid\n");
        assert_eq!(dist(&sid)[1], "13");
        let ubuntu = os("os_NAME=\"Ubuntu\"\nos_ID=ubuntu\nos_ID_LIKE=debian\nos_VERSION_ID=\"24.04\"\ndebian_version=trixie/sid\n");
        assert_eq!(dist(&ubuntu), ["Ubuntu", "24.04", "24", "Debian", "apt"]);
        let centos7 = os("os_NAME=\"CentOS Linux\"\nos_ID=\"centos\"\nos_ID_LIKE=\"rhel fedora\"\nos_VERSION_ID=\"7\"\nredhat_release=CentOS Linux release 7.9.2009 (Core)\n");
        assert_eq!(dist(&centos7), ["CentOS", "7.9", "7", "RedHat", "yum"]);
        let stream9 = os("os_NAME=\"CentOS Stream\"\nos_ID=\"centos\"\nos_ID_LIKE=\"rhel fedora\"\nos_VERSION_ID=\"9\"\nredhat_release=CentOS Stream release 9\n");
        assert_eq!(dist(&stream9), ["CentOS", "9", "9", "RedHat", "dnf"]);
        let rhel = os("os_NAME=\"Red Hat Enterprise Linux\"\nos_ID=\"rhel\"\nos_ID_LIKE=\"fedora\"\nos_VERSION_ID=\"8.10\"\n");
        assert_eq!(dist(&rhel), ["RedHat", "8.10", "8", "RedHat", "dnf"]);
        let rocky = os("os_NAME=\"Rocky Linux\"\nos_ID=\"rocky\"\nos_ID_LIKE=\"rhel centos fedora\"\nos_VERSION_ID=\"9.4\"\n");
        assert_eq!(dist(&rocky), ["Rocky", "9.4", "9", "RedHat", "dnf"]);
        let alma = os("os_NAME=\"AlmaLinux\"\nos_ID=\"almalinux\"\nos_ID_LIKE=\"rhel centos fedora\"\nos_VERSION_ID=\"9.5\"\n");
        assert_eq!(dist(&alma), ["AlmaLinux", "9.5", "9", "RedHat", "dnf"]);
        let oracle = os("os_NAME=\"Oracle Linux Server\"\nos_ID=\"ol\"\nos_ID_LIKE=\"fedora\"\nos_VERSION_ID=\"7.9\"\n");
        assert_eq!(dist(&oracle), ["OracleLinux", "7.9", "7", "RedHat", "yum"]);
        let unknown = os("os_NAME=\"Gentoo\"\nos_ID=gentoo\nos_VERSION_ID=2.15\n");
        assert_eq!(dist(&unknown), ["Gentoo", "2.15", "2", "Linux", "unknown"]);
    }
}
