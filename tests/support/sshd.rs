//! SSH servers on isolated hosts, for tests of the SSH transport.
//!
//! An `SshHost` is an `IsolatedHost` whose private /etc is set up as a small
//! server (its own host key, users `deploy` and `ops`, sudo rules) and whose
//! `sshd` listens on `127.0.1.N:22`. The sshd is PID 1 of its namespace, so
//! every session it serves sees the host's private /etc, /root, /run and fake
//! /proc/sys/vm, never the developer machine's.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::IsolatedHost;

pub const DEPLOY_PASSWORD: &str = "deploy-pass";

/// How long sshd may take to accept connections; generous because many hosts
/// start at once on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Run inside the host with the test key as $1 and the listen address as $2.
/// The copied /etc still holds the machine's own host keys: they are replaced
/// so each host has its own and the machine's private keys never linger in a
/// temp dir. Homes live under /run because /home is the real one.
const SETUP_SCRIPT: &str = r#"set -eu
PATH=$PATH:/usr/sbin:/sbin
key=$1 addr=$2
rm -f /etc/ssh/ssh_host_*
# One ed25519 key rather than `ssh-keygen -A`: RSA keys take long to make
# for 20 hosts at once, and known_hosts lines name this one.
ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
mkdir -p /run/home /run/sshd
for user in deploy ops; do
	useradd --no-log-init -m -d "/run/home/$user" -s /bin/sh "$user"
done
echo "deploy:deploy-pass" | chpasswd
# useradd leaves ops locked ("!"), and without PAM sshd then refuses even its
# key; "*" means "no password" but not locked.
usermod -p '*' ops
# Without a lecture sudo writes nothing under /var/lib/sudo, which is the
# machine's; without syslog it leaves the machine's logs alone.
cat >/etc/sudoers.d/nodeprov-test <<'EOF'
Defaults !syslog, lecture=never
deploy ALL=(ALL:ALL) ALL
ops ALL=(ALL:ALL) NOPASSWD: ALL
EOF
chmod 440 /etc/sudoers.d/nodeprov-test
for home in /root /run/home/deploy /run/home/ops; do
	mkdir -p "$home/.ssh"
	printf '%s\n' "$key" >"$home/.ssh/authorized_keys"
done
chown -R deploy: /run/home/deploy/.ssh
chown -R ops: /run/home/ops/.ssh
cat >/etc/ssh/sshd_config <<EOF
ListenAddress $addr:22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
MaxStartups 100
LogLevel VERBOSE
# As on a stock server: Ansible and pyinfra upload files over SFTP. The
# in-process server needs no sftp-server binary inside the host.
Subsystem sftp internal-sftp
EOF
# sudo resolves the host's own name and complains on stderr when it cannot.
printf '%s %s\n' "$addr" "$(uname -n)" >>/etc/hosts
"#;

/// The client key every test host authorizes for root, deploy and ops.
pub struct TestKey {
    dir: PathBuf,
}

impl TestKey {
    /// Made once, in cargo's per-target temp dir, and reused by later runs so
    /// that no run leaves a key behind.
    pub fn get() -> &'static TestKey {
        static KEY: OnceLock<TestKey> = OnceLock::new();
        KEY.get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ssh-test-key");
            if !dir.join("id_ed25519.pub").exists() {
                make_key_dir(&dir);
            }
            TestKey { dir }
        })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("id_ed25519")
    }

    pub fn public(&self) -> String {
        read_trimmed(&self.dir.join("id_ed25519.pub"))
    }
}

/// Generates the key pair beside `dir` and renames it into place, so test
/// processes racing to make it all end up with the same, complete one.
fn make_key_dir(dir: &Path) {
    let parent = dir.parent().expect("key dir has a parent");
    let fresh = tempfile::Builder::new()
        .prefix("ssh-key-")
        .tempdir_in(parent)
        .expect("create key dir");
    keygen(&fresh.path().join("id_ed25519"));
    // Losing the race leaves `fresh` to be removed on drop.
    if std::fs::rename(fresh.path(), dir).is_ok() {
        let _ = fresh.keep();
    }
}

/// Writes a new passphrase-less ed25519 key pair at `path` and `path.pub`.
pub fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "nodeprov-test", "-f"])
        .arg(path)
        .status()
        .expect("spawn ssh-keygen")
        .success();
    assert!(ok, "ssh-keygen failed for {}", path.display());
}

pub struct SshHost {
    pub host: IsolatedHost,
    ip: Ipv4Addr,
    server: Option<Child>,
    sshd_pid: i32,
}

impl SshHost {
    /// A host serving SSH on 127.0.1.`n`:22. Panics if it does not come up.
    pub fn start(n: u8) -> SshHost {
        Self::start_on(Ipv4Addr::new(127, 0, 1, n))
    }

    /// A host serving SSH on `ip`:22, a loopback address; on 127.0.1.N its
    /// name is `sshN`, elsewhere `sshC-N` for 127.0.C.N.
    pub fn start_on(ip: Ipv4Addr) -> SshHost {
        let [a, _, c, n] = ip.octets();
        assert!(
            a == 127 && (1..=254).contains(&n),
            "{ip} is not a loopback host address"
        );
        let name = match c {
            1 => format!("ssh{n:03}"),
            _ => format!("ssh{c}-{n:03}"),
        };
        Self::start_as(ip, IsolatedHost::with_hostname(&name))
    }

    /// `host` serving SSH on `ip`:22, a loopback address.
    pub fn start_as(ip: Ipv4Addr, host: IsolatedHost) -> SshHost {
        let mut me = SshHost {
            host,
            ip,
            server: None,
            sshd_pid: 0,
        };
        me.configure();
        me.launch();
        me
    }

    fn configure(&self) {
        let key = TestKey::get().public();
        let out = self
            .host
            .run(&["/bin/sh", "-c", SETUP_SCRIPT, "setup", &key, &self.ip()]);
        assert!(
            out.status.success(),
            "setting up {} failed: {}",
            self.name(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Spawns sshd and waits until it accepts connections.
    fn launch(&mut self) {
        let sshd = self.host.spawn(&["/usr/sbin/sshd", "-D", "-e"]);
        self.sshd_pid = namespace_init(sshd.id());
        self.server = Some(sshd);
        self.await_listening();
    }

    /// Waits until sshd accepts connections; panics if it exits or takes
    /// longer than START_TIMEOUT.
    fn await_listening(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect_timeout(&self.addr(), Duration::from_secs(1)).is_err() {
            let exited = self
                .server
                .as_mut()
                .and_then(|c| c.try_wait().ok())
                .flatten();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "sshd of {} did not start ({exited:?}): {}",
                self.name(),
                self.host.spawn_log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The inventory name: the host's own hostname.
    pub fn name(&self) -> &str {
        self.host.hostname()
    }

    pub fn ip(&self) -> String {
        self.ip.to_string()
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((self.ip, 22))
    }

    pub fn key_path(&self) -> PathBuf {
        TestKey::get().path()
    }

    /// This host's line for a known_hosts file.
    pub fn known_hosts_line(&self) -> String {
        let public = read_trimmed(&self.host.path("/etc/ssh/ssh_host_ed25519_key.pub"));
        let mut fields = public.split_whitespace();
        let (kind, blob) = (fields.next().unwrap(), fields.next().unwrap());
        format!("{} {kind} {blob}", self.ip())
    }

    /// The listening sshd's process id, as seen from outside its namespace.
    pub fn sshd_pid(&self) -> i32 {
        self.sshd_pid
    }

    /// What sshd logged, for failure messages.
    pub fn log(&self) -> String {
        self.host.spawn_log()
    }

    /// Kills sshd and everything it started: the host is down.
    pub fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }

    /// Appends `lines` to the host's sshd_config and has sshd reread it
    /// (SIGHUP: it execs itself again, keeping its pid).
    pub fn reconfigure(&mut self, lines: &str) {
        let config = self.host.path("/etc/ssh/sshd_config");
        let mut text = std::fs::read_to_string(&config).expect("read sshd_config");
        text.push_str(lines);
        std::fs::write(&config, text).expect("write sshd_config");
        self.signal(libc::SIGHUP);
        // The listening socket closes while sshd execs itself.
        std::thread::sleep(Duration::from_millis(500));
        self.await_listening();
    }

    /// Freezes sshd: connections are still accepted by the kernel but never
    /// answered, as on a hung machine.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, sig: i32) {
        assert!(self.server.is_some(), "{} is stopped", self.name());
        // SAFETY: kill(2) on the sshd this host started and still owns.
        let rc = unsafe { libc::kill(self.sshd_pid, sig) };
        assert_eq!(rc, 0, "signal {sig} to sshd of {}", self.name());
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Many SSH hosts, started in parallel.
pub struct SshFleet {
    pub hosts: Vec<SshHost>,
}

impl SshFleet {
    /// `count` hosts on addresses no other fleet of this test process uses,
    /// since tests run in parallel.
    pub fn start(count: u8) -> SshFleet {
        static NEXT: AtomicU8 = AtomicU8::new(1);
        let first = NEXT.fetch_add(count, Ordering::Relaxed);
        Self::start_at(first, count)
    }

    /// `count` hosts on 127.0.1.`first` and up, started in parallel.
    pub fn start_at(first: u8, count: u8) -> SshFleet {
        assert!(
            u16::from(first) + u16::from(count) <= 255,
            "out of 127.0.1.x addresses"
        );
        let hosts = std::thread::scope(|s| {
            let starting: Vec<_> = (first..first + count)
                .map(|n| s.spawn(move || SshHost::start(n)))
                .collect();
            starting
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        SshFleet { hosts }
    }

    /// One host on each of `ips`, started in parallel `at_once` at a time, so
    /// that a large fleet does not set up hundreds of hosts at the same time.
    pub fn start_on(ips: &[Ipv4Addr], at_once: usize) -> SshFleet {
        let mut hosts = Vec::with_capacity(ips.len());
        for chunk in ips.chunks(at_once.max(1)) {
            std::thread::scope(|s| {
                let starting: Vec<_> = chunk
                    .iter()
                    .map(|&ip| s.spawn(move || SshHost::start_on(ip)))
                    .collect();
                hosts.extend(
                    starting
                        .into_iter()
                        .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
                );
            });
        }
        SshFleet { hosts }
    }

    /// Every host's known_hosts line.
    pub fn known_hosts(&self) -> String {
        known_hosts(&self.hosts)
    }

    /// An INI inventory of all hosts in group `fleet`, logging in as `user`
    /// with the test key, plus `extra` variables on every host line.
    pub fn inventory(&self, user: &str, extra: &str) -> String {
        inventory(&self.hosts, user, extra)
    }

    /// An inventory of `count` root hosts (`h00000`…) dealt in turn over
    /// this fleet's servers by `ansible_host`: each is still its own SSH
    /// connection, which is what a controller's limits are about, and a
    /// fleet of thousands costs a few servers.
    pub fn shared_inventory(&self, count: usize) -> String {
        let mut ini = String::from("[fleet]\n");
        for i in 0..count {
            let server = &self.hosts[i % self.hosts.len()];
            writeln!(
                ini,
                "h{i:05} ansible_host={} ansible_user=root ansible_ssh_private_key_file={}",
                server.ip(),
                server.key_path().display()
            )
            .unwrap();
        }
        ini
    }
}

/// The known_hosts lines of `hosts`.
pub fn known_hosts(hosts: &[SshHost]) -> String {
    hosts.iter().map(|h| h.known_hosts_line() + "\n").collect()
}

/// [`SshFleet::inventory`] of some of a fleet's hosts.
pub fn inventory(hosts: &[SshHost], user: &str, extra: &str) -> String {
    let mut ini = String::from("[fleet]\n");
    for h in hosts {
        writeln!(
            ini,
            "{} ansible_host={} ansible_user={user} ansible_ssh_private_key_file={} {extra}",
            h.name(),
            h.ip(),
            h.key_path().display()
        )
        .unwrap();
    }
    ini
}

/// The PID of the namespace's first process, the only child of `unshare`.
fn namespace_init(unshare: u32) -> i32 {
    let children = format!("/proc/{unshare}/task/{unshare}/children");
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let listed = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = listed.split_whitespace().next() {
            return pid.parse().expect("pid");
        }
        assert!(Instant::now() < deadline, "unshare {unshare} never forked");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read_trimmed(path: &Path) -> String {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.trim_end().to_string()
}
