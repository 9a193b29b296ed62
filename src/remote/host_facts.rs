//! The facts a play gathers (`gather_facts`), as Ansible's `ansible_*`
//! variables, read by one probe in the same batch as the tasks' probes.

use serde_json::{json, Map, Value};

use crate::remote::probe::{Probe, ProbeResult};

mod distribution;

pub const KEY: &str = "host:facts";

pub fn probe() -> Probe {
    Probe::new(
        KEY,
        r#"echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "kernel=$(uname -r)"
echo "arch=$(uname -m)"
u=$(id -un); echo "user=$u"
while IFS=: read -r n _ uid gid gecos dir sh; do
  [ "$n" = "$u" ] && { echo "passwd $uid:$gid:$dir:$sh:$gecos"; break; }
done < /etc/passwd 2>/dev/null
env -0 2>/dev/null | tr '\n\0' '\1\n' | sed 's/^/envvar /'
for p in python3 /usr/libexec/platform-python; do
  command -v "$p" >/dev/null 2>&1 || continue
  "$p" -c 'import sys; v = sys.version_info; print("python %d %d %d %s %d %s" % (v[0], v[1], v[2], v[3], v[4], sys.executable))' 2>/dev/null && break
done
echo "date $(date '+%Y %m %d %H %M %S %s %N %z %A %w %W %Z' 2>/dev/null)"
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
for f in /etc/os-release /usr/lib/os-release; do
  [ -f "$f" ] || continue
  echo "osfile=$f"
  while IFS= read -r l || [ -n "$l" ]; do echo "os $l"; done < "$f"
  break
done
[ -f /etc/lsb-release ] && while IFS= read -r l || [ -n "$l" ]; do echo "lsb $l"; done < /etc/lsb-release
for f in oracle-release centos-release redhat-release system-release debian_version; do
  [ -s /etc/$f ] && { IFS= read -r l || [ -n "$l" ]; } < /etc/$f && echo "release $f $l"
done
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
for d in /sys/bus/pci/devices/*; do
  [ -r "$d/vendor" ] && read -r v < "$d/vendor" && [ "$v" = 0x10de ] || continue
  read -r c < "$d/class" && echo "nvpci ${d##*/} $c"
done
for m in nouveau nvidia; do [ -d /sys/module/$m ] && echo "kmod $m"; done
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
        become_flags: None,
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
    let dist = distribution::detect(&distribution_sources(&r.stdout, &kv));
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
        "ansible_env": environment(&prefixed(&r.stdout, "envvar ")),
        "ansible_service_mgr": if get("systemd") == "1" { "systemd" } else { "other" },
        "ansible_processor_vcpus": num("nproc"),
        "ansible_memtotal_mb": memtotal_kb / 1024,
        "ansible_distribution": dist.name,
        "ansible_distribution_version": dist.version,
        "ansible_distribution_major_version": dist.major,
        "ansible_distribution_release": dist.release,
        "ansible_os_family": dist.family,
        "ansible_pkg_mgr": distribution::pkg_mgr(&dist),
        "ansible_swaptotal_mb": swaptotal_kb / 1024,
        "ansible_selinux": selinux(&get("selinux")),
        "nodeprov_root_fstype": get("rootfs"),
        "nodeprov_tuned_profile": kv.get("tuned").cloned(),
        "nodeprov_gpu": gpu(&kv, &r.stdout),
    });
    let Value::Object(mut facts) = facts else {
        unreachable!("built as an object")
    };
    facts.extend(user(prefixed(&r.stdout, "passwd ").first().copied()));
    facts.extend(python(prefixed(&r.stdout, "python ").first().copied()));
    if let Some(now) = prefixed(&r.stdout, "date ").first() {
        facts.insert("ansible_date_time".into(), date_time(now));
    }
    let namespace = ansible_facts(&facts);
    facts.insert("ansible_facts".into(), Value::Object(namespace));
    facts
}

/// What nvidia-smi says, and what the kernel shows without it: NVIDIA's
/// PCI functions by class (a GPU is a display controller, 0x03xxxx; an
/// NVSwitch a bridge, 0x0680xx, which is how HGX boards are told apart
/// without a list of device IDs), and whether nouveau or nvidia is loaded.
fn gpu(kv: &std::collections::HashMap<&str, String>, stdout: &str) -> Value {
    let count = kv
        .get("gpu_count")
        .and_then(|c| c.parse::<u64>().ok())
        .unwrap_or(0);
    let classes: Vec<&str> = prefixed(stdout, "nvpci ")
        .into_iter()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let of_class = |prefix: &str| classes.iter().filter(|c| c.starts_with(prefix)).count();
    let loaded = prefixed(stdout, "kmod ");
    json!({
        "present": kv.contains_key("gpu_driver") && count > 0,
        "count": count,
        "driver": kv.get("gpu_driver").filter(|d| !d.is_empty()).cloned(),
        "pci_gpus": of_class("0x03"),
        "nvswitches": of_class("0x0680"),
        "nouveau_loaded": loaded.contains(&"nouveau"),
        "nvidia_loaded": loaded.contains(&"nvidia"),
    })
}

/// The release files the probe read, for the distribution facts.
fn distribution_sources<'a>(
    stdout: &'a str,
    kv: &std::collections::HashMap<&str, String>,
) -> distribution::Sources<'a> {
    let release_files = prefixed(stdout, "release ")
        .into_iter()
        .filter_map(|l| l.split_once(' '))
        .collect();
    distribution::Sources {
        os_release: prefixed(stdout, "os "),
        os_release_in_etc: kv.get("osfile").is_some_and(|f| f.starts_with("/etc/")),
        lsb_release: prefixed(stdout, "lsb "),
        release_files,
    }
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
                "device": crate::base::shell::unescape_octal(device),
                "mount": crate::base::shell::unescape_octal(mount),
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

/// `ansible_env`: the environment of the user the facts were gathered as,
/// from `env -0` with its NULs made line ends and its newlines `\x01`.
fn environment(lines: &[&str]) -> Value {
    let vars: Map<String, Value> = lines
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), Value::from(v.replace('\x01', "\n"))))
        .collect();
    Value::Object(vars)
}

/// Ansible's user facts from the user's passwd entry (`uid:gid:dir:shell:gecos`).
fn user(line: Option<&str>) -> Map<String, Value> {
    let mut facts = Map::new();
    let Some(line) = line else {
        return facts;
    };
    let mut f = line.splitn(5, ':');
    let mut next = || f.next().unwrap_or_default();
    let (uid, gid, dir, shell, gecos) = (next(), next(), next(), next(), next());
    let id = |v: &str| v.parse::<u64>().map_or(Value::Null, Value::from);
    for (k, v) in [
        ("ansible_user_uid", id(uid)),
        ("ansible_user_gid", id(gid)),
        ("ansible_user_dir", dir.into()),
        ("ansible_user_shell", shell.into()),
        ("ansible_user_gecos", gecos.into()),
    ] {
        facts.insert(k.into(), v);
    }
    facts
}

/// `ansible_python_version` and `ansible_python` of the host's Python 3
/// (`major minor micro releaselevel serial executable`).
fn python(line: Option<&str>) -> Map<String, Value> {
    let mut facts = Map::new();
    let Some(line) = line else {
        return facts;
    };
    let f: Vec<&str> = line.splitn(6, ' ').collect();
    let [major, minor, micro, level, serial, executable] = f[..] else {
        return facts;
    };
    let n = |v: &str| v.parse::<u64>().unwrap_or(0);
    facts.insert(
        "ansible_python_version".into(),
        format!("{major}.{minor}.{micro}").into(),
    );
    facts.insert(
        "ansible_python".into(),
        json!({
            "executable": executable,
            "has_sslcontext": true,
            "type": "cpython",
            "version": {"major": n(major), "minor": n(minor), "micro": n(micro),
                        "releaselevel": level, "serial": n(serial)},
            "version_info": [n(major), n(minor), n(micro), level, n(serial)],
        }),
    );
    facts
}

/// Ansible's `date_time`, every value text as Ansible's, from one `date`
/// (`%Y %m %d %H %M %S %s %N %z %A %w %W %Z`); the UTC forms are computed
/// from the epoch. `tz_dst` (the zone's daylight-saving name) is not read.
fn date_time(line: &str) -> Value {
    let f: Vec<&str> = line.split(' ').collect();
    let [y, mo, d, h, mi, sec, epoch, nanos, offset, weekday, wday, week, tz] = f[..] else {
        return json!({});
    };
    let micro = nanos.get(..6).unwrap_or("000000");
    let secs = epoch.parse::<i64>().unwrap_or(0);
    let (uy, um, ud) = crate::base::time::civil_from_days(secs.div_euclid(86_400));
    let day = secs.rem_euclid(86_400);
    let utc = format!(
        "{uy:04}-{um:02}-{ud:02}T{:02}:{:02}:{:02}",
        day / 3600,
        day % 3600 / 60,
        day % 60
    );
    json!({
        "year": y, "month": mo, "day": d, "hour": h, "minute": mi, "second": sec,
        "weekday": weekday, "weekday_number": wday, "weeknumber": week,
        "epoch": epoch, "epoch_int": epoch,
        "date": format!("{y}-{mo}-{d}"), "time": format!("{h}:{mi}:{sec}"),
        "iso8601": format!("{utc}Z"), "iso8601_micro": format!("{utc}.{micro}Z"),
        "iso8601_basic": format!("{y}{mo}{d}T{h}{mi}{sec}{micro}"),
        "iso8601_basic_short": format!("{y}{mo}{d}T{h}{mi}{sec}"),
        "tz": tz, "tz_offset": offset,
    })
}

/// Ansible's shape: `{status: disabled}` or `{status: enabled, mode: …}`.
fn selinux(mode: &str) -> Value {
    match mode {
        "enforcing" | "permissive" => json!({"status": "enabled", "mode": mode}),
        _ => json!({"status": "disabled"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocky_and_ubuntu() {
        let r = ProbeResult::ok(format!(
            "hostname=gpu-01.lab\nkernel=5.14\narch=x86_64\nuser=root\nsystemd=1\nnproc=64\nmemtotal_kb=2097152\n{}",
            ROCKY_9
        ));
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
            json!({"present": true, "count": 8, "driver": "580.159.04", "pci_gpus": 0,
                "nvswitches": 0, "nouveau_loaded": false, "nvidia_loaded": false})
        );
        let hgx = parse(&ProbeResult::ok(concat!(
            "nvpci 0000:18:00.0 0x030200\nnvpci 0000:2a:00.0 0x030200\n",
            "nvpci 0000:05:00.0 0x068000\nnvpci 0000:06:00.0 0x068000\n",
            "kmod nvidia\n",
        )));
        assert_eq!(
            [
                &hgx["nodeprov_gpu"]["pci_gpus"],
                &hgx["nodeprov_gpu"]["nvswitches"]
            ],
            [2, 2]
        );
        assert_eq!(hgx["nodeprov_gpu"]["nvidia_loaded"], true);
        assert_eq!(hgx["nodeprov_gpu"]["nouveau_loaded"], false);
        let u = parse(&ProbeResult::ok(format!("systemd=0\n{UBUNTU_24}")));
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
    fn environment_user_python_and_time_read_as_ansible_names_them() {
        let f = parse(&ProbeResult::ok(concat!(
            "user=ops\npasswd 1001:1002:/home/ops:/bin/bash:Ops, Room 1\n",
            "envvar HOME=/home/ops\nenvvar PS1=a=b\x01> \nenvvar EMPTY=\n",
            "python 3 11 2 final 0 /usr/bin/python3\n",
            "date 2024 02 29 23 30 05 1709245805 123456789 +0100 Thursday 4 08 CET\n",
        )));
        assert_eq!(
            f["ansible_env"],
            json!({"HOME": "/home/ops", "PS1": "a=b\n> ", "EMPTY": ""})
        );
        let user: Vec<&Value> = ["uid", "gid", "dir", "shell", "gecos"]
            .iter()
            .map(|k| &f[&format!("ansible_user_{k}")])
            .collect();
        assert_eq!(
            user,
            [
                &json!(1001),
                &json!(1002),
                &json!("/home/ops"),
                &json!("/bin/bash"),
                &json!("Ops, Room 1")
            ]
        );
        assert_eq!(f["ansible_python_version"], "3.11.2");
        assert_eq!(f["ansible_python"]["version"]["minor"], 11);
        assert_eq!(f["ansible_python"]["executable"], "/usr/bin/python3");
        assert_eq!(
            f["ansible_facts"]["python"]["version_info"],
            json!([3, 11, 2, "final", 0])
        );
        let t = &f["ansible_date_time"];
        assert_eq!(t["date"], "2024-02-29");
        assert_eq!(t["time"], "23:30:05");
        assert_eq!(t["epoch"], "1709245805");
        // 23:30:05 at +0100 is 22:30:05 UTC, on the leap day.
        assert_eq!(t["iso8601"], "2024-02-29T22:30:05Z");
        assert_eq!(t["iso8601_micro"], "2024-02-29T22:30:05.123456Z");
        assert_eq!(t["iso8601_basic_short"], "20240229T233005");
        assert_eq!(
            (&t["weekday"], &t["tz"], &t["tz_offset"]),
            (&json!("Thursday"), &json!("CET"), &json!("+0100"))
        );
    }

    #[test]
    fn the_ansible_facts_namespace_holds_every_fact_without_its_prefix() {
        let f = os(&format!("kernel=5.14\n{ROCKY_9}"));
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

    /// Probe output for a host with these os-release lines and release
    /// files (name, first line), as the distributions ship them.
    fn release(os_release: &[&str], files: &[(&str, &str)]) -> String {
        let mut out = String::from("osfile=/etc/os-release\n");
        for l in os_release {
            out += &format!("os {l}\n");
        }
        for (f, line) in files {
            out += &format!("release {f} {line}\n");
        }
        out
    }

    const ROCKY_9: &str = "osfile=/etc/os-release\nos NAME=\"Rocky Linux\"\nos VERSION=\"9.4 (Blue Onyx)\"\nos ID=\"rocky\"\nos ID_LIKE=\"rhel centos fedora\"\nos VERSION_ID=\"9.4\"\nrelease redhat-release Rocky Linux release 9.4 (Blue Onyx)\nrelease system-release Rocky Linux release 9.4 (Blue Onyx)\n";
    const UBUNTU_24: &str = "osfile=/etc/os-release\nos PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nos NAME=\"Ubuntu\"\nos VERSION_ID=\"24.04\"\nos VERSION=\"24.04.1 LTS (Noble Numbat)\"\nos VERSION_CODENAME=noble\nos ID=ubuntu\nos ID_LIKE=debian\nos UBUNTU_CODENAME=noble\nrelease debian_version trixie/sid\n";

    #[test]
    fn distribution_facts_are_ansibles() {
        let rocky = os(ROCKY_9);
        assert_eq!(dist(&rocky), ["Rocky", "9.4", "9", "RedHat", "dnf"]);
        assert_eq!(rocky["ansible_distribution_release"], "Blue Onyx");
        let ubuntu = os(UBUNTU_24);
        assert_eq!(dist(&ubuntu), ["Ubuntu", "24.04", "24", "Debian", "apt"]);
        assert_eq!(ubuntu["ansible_distribution_release"], "noble");
        let debian = os(&release(
            &[
                "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"",
                "NAME=\"Debian GNU/Linux\"",
                "VERSION_ID=\"12\"",
                "VERSION_CODENAME=bookworm",
                "ID=debian",
            ],
            &[("debian_version", "12.11")],
        ));
        assert_eq!(dist(&debian), ["Debian", "12.11", "12", "Debian", "apt"]);
        assert_eq!(debian["ansible_distribution_release"], "bookworm");
        let sid = os(&release(
            &[
                "PRETTY_NAME=\"Debian GNU/Linux trixie/sid\"",
                "VERSION_ID=\"13\"",
                "ID=debian",
            ],
            &[("debian_version", "trixie/sid")],
        ));
        assert_eq!(dist(&sid)[1], "13");
        let el_os = |name: &str, id: &str, version: &str| {
            [
                format!("NAME=\"{name}\""),
                format!("ID=\"{id}\""),
                "ID_LIKE=\"rhel fedora\"".to_string(),
                format!("VERSION_ID=\"{version}\""),
            ]
        };
        let el = |os_release: [String; 4], files: &[(&str, &str)]| {
            let lines: Vec<&str> = os_release.iter().map(String::as_str).collect();
            let f = os(&release(&lines, files));
            dist(&f).map(str::to_string)
        };
        let centos7 = "CentOS Linux release 7.9.2009 (Core)";
        assert_eq!(
            el(
                el_os("CentOS Linux", "centos", "7"),
                &[("centos-release", centos7), ("redhat-release", centos7)]
            ),
            ["CentOS", "7.9", "7", "RedHat", "yum"]
        );
        let stream9 = "CentOS Stream release 9";
        let stream = os(&release(
            &el_os("CentOS Stream", "centos", "9")
                .each_ref()
                .map(String::as_str),
            &[("centos-release", stream9), ("redhat-release", stream9)],
        ));
        assert_eq!(dist(&stream), ["CentOS", "9", "9", "RedHat", "dnf"]);
        assert_eq!(stream["ansible_distribution_release"], "Stream");
        assert_eq!(
            el(
                el_os("Red Hat Enterprise Linux", "rhel", "8.10"),
                &[(
                    "redhat-release",
                    "Red Hat Enterprise Linux release 8.10 (Ootpa)"
                )]
            ),
            ["RedHat", "8.10", "8", "RedHat", "dnf"]
        );
        let alma = "AlmaLinux release 9.5 (Teal Serval)";
        assert_eq!(
            el(
                el_os("AlmaLinux", "almalinux", "9.5"),
                &[
                    ("almalinux-release", alma),
                    ("centos-release", alma),
                    ("redhat-release", alma)
                ]
            ),
            ["AlmaLinux", "9.5", "9", "RedHat", "dnf"]
        );
        assert_eq!(
            el(
                el_os("Oracle Linux Server", "ol", "7.9"),
                &[
                    ("oracle-release", "Oracle Linux Server release 7.9"),
                    (
                        "redhat-release",
                        "Red Hat Enterprise Linux Server release 7.9 (Maipo)"
                    )
                ]
            ),
            ["OracleLinux", "7.9", "7", "RedHat", "yum"]
        );
        // Without os-release (EL6): the release file alone.
        let el6 = os("release redhat-release CentOS release 6.10 (Final)\n");
        assert_eq!(dist(&el6), ["CentOS", "6.10", "6", "RedHat", "yum"]);
        assert_eq!(el6["ansible_distribution_release"], "Final");
        let sles = os(&release(
            &[
                "NAME=\"SLES\"",
                "VERSION=\"15-SP5\"",
                "VERSION_ID=\"15.5\"",
                "PRETTY_NAME=\"SUSE Linux Enterprise Server 15 SP5\"",
                "ID=\"sles\"",
                "ID_LIKE=\"suse\"",
                "CPE_NAME=\"cpe:/o:suse:sles:15:sp5\"",
            ],
            &[],
        ));
        assert_eq!(dist(&sles), ["SLES", "15.5", "15", "Suse", "zypper"]);
        assert_eq!(sles["ansible_distribution_release"], "5");
        // Names Ansible has no rule for are os-release's NAME, their own family.
        let gentoo = os(&release(
            &["NAME=Gentoo", "ID=gentoo", "VERSION_ID=2.15"],
            &[],
        ));
        assert_eq!(dist(&gentoo), ["Gentoo", "2.15", "2", "Gentoo", "portage"]);
        let bare = os("");
        assert_eq!(
            dist(&bare),
            ["OtherLinux", "NA", "NA", "OtherLinux", "unknown"]
        );
    }

    #[test]
    fn release_file_lines_read_as_the_distro_library_reads_them() {
        use distribution::parse_release_line as p;
        let read = |line: &str, version: &str, codename: &str| {
            assert_eq!(
                p(line),
                (version.to_string(), codename.to_string()),
                "{line}"
            );
        };
        read("CentOS Linux release 7.9.2009 (Core)", "7.9.2009", "Core");
        read("CentOS Stream release 9", "9", "");
        read("Ubuntu 24.04.1 LTS", "24.04.1", "");
        read("Debian GNU/Linux trixie/sid", "", "");
    }
}
