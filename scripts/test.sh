#!/usr/bin/env bash
# Runs every check the project has: formatting, clippy, the release artefacts
# (scripts/dist.sh) and all tests, including the integration tests that
# provision isolated hosts (tests/support) and install those artefacts. Those run
# as root in private namespaces; this script proves afterwards that the machine
# running them was left alone, and fails loudly if it was not.
#
# Then the end-to-end tests on real VMs (tests/vm, tests/vm_e2e.rs), which
# build a cached Debian image and boot it under qemu; they take minutes.
# NODEPROV_SKIP_VM_TESTS=1 skips them and the packages only they need.
set -euo pipefail

cd "$(dirname "$0")/.."
# sysctl and mount live in sbin, which non-login shells may leave off PATH; the
# isolated hosts inherit this PATH too.
export PATH="$PATH:/usr/sbin:/sbin"

# Commands the tests run, and the Debian package that provides each.
REQUIRED_COMMANDS=(
	"sysctl procps"
	"unshare util-linux"
	"nsenter util-linux"
	"ip iproute2"
	"dbus-daemon dbus-daemon"
	"mount mount"
	"sshd openssh-server"
	"ssh-keygen openssh-client"
	"ssh-agent openssh-client"
	"sudo sudo"
	"useradd passwd"
	"xmllint libxml2-utils"
	"chromium chromium"
	"munged munge"
	"slurmctld slurmctld"
	"slurmd slurmd"
	"sbatch slurm-client"
	"tuned-adm tuned"
	"dnf dnf"
	"rpm rpm"
	"rpmbuild rpm"
	"createrepo_c createrepo-c"
	"modifyrepo_c createrepo-c"
	"dpkg-scanpackages dpkg-dev"
	"ufw ufw"
	"iptables-save iptables"
	"nft nftables"
	"nsenter util-linux"
	"musl-gcc musl-tools"
)

# What the real-VM tests add.
VM_COMMANDS=(
	"qemu-system-x86_64 qemu-system-x86"
	"qemu-img qemu-utils"
	"debootstrap debootstrap"
	"mkfs.ext4 e2fsprogs"
	"mkfs.xfs xfsprogs"
	"mkfs.btrfs btrfs-progs"
	"flock util-linux"
	"ssh openssh-client"
	"ssh-keyscan openssh-client"
	"ssh-keygen openssh-client"
)

vm_tests_wanted() {
	[ "${NODEPROV_SKIP_VM_TESTS:-}" != 1 ]
}

missing_packages() {
	local entry cmd package commands=("${REQUIRED_COMMANDS[@]}")
	if vm_tests_wanted; then
		commands+=("${VM_COMMANDS[@]}")
	fi
	for entry in "${commands[@]}"; do
		read -r cmd package <<<"$entry"
		command -v "$cmd" >/dev/null || echo "$package"
	done
	# The ansible-core venv's Python (see install_ansible_venv).
	/usr/bin/python3 -c 'import ensurepip' 2>/dev/null || echo python3-venv
}

install_missing_packages() {
	local missing
	missing=$(missing_packages | sort -u | tr '\n' ' ')
	[ -n "$missing" ] || return 0
	if ! command -v apt-get >/dev/null; then
		echo "test.sh: missing packages ($missing) and no apt-get to install them" >&2
		exit 1
	fi
	echo "test.sh: installing $missing"
	export DEBIAN_FRONTEND=noninteractive
	local rules_before
	rules_before=$(netfilter_rules)
	forbid_service_starts
	apt-get update -qq </dev/null
	# shellcheck disable=SC2086,SC2046 # one word per package
	apt-get install -y -qq --no-install-recommends --allow-downgrades \
		$missing $(matching_qemu_utils "$missing") </dev/null
	restore_service_policy
	check_ufw_left_off "$missing" "$rules_before"
}

# The distribution's qemu-system-x86 breaks with a newer qemu-utils (from
# backports, say), and apt would rather give up than pick the older one: name
# the release's own qemu-utils alongside it.
matching_qemu_utils() {
	case " $1 " in
	*" qemu-system-x86 "*)
		# shellcheck disable=SC1091 # the machine's own release file
		echo "qemu-utils/$(. /etc/os-release && echo "$VERSION_CODENAME")"
		;;
	esac
}

# Installing openssh-server must not start a real sshd on this machine (the
# tests start their own, in namespaces): invoke-rc.d asks policy-rc.d, and 101
# means "not allowed". A policy already in place is left as it is. ufw is
# installed disabled (ENABLED=no in /etc/ufw/ufw.conf) and its unit, were it
# started, would load no rule; tests/ufw.rs enables it only inside a host's
# own network namespace, and machine_state below lists this machine's rules.
POLICY_RC_D=/usr/sbin/policy-rc.d
created_policy=
forbid_service_starts() {
	[ -e "$POLICY_RC_D" ] && return 0
	created_policy=1
	trap restore_service_policy EXIT
	printf '#!/bin/sh\nexit 101\n' >"$POLICY_RC_D"
	chmod 755 "$POLICY_RC_D"
}

restore_service_policy() {
	[ -n "$created_policy" ] || return 0
	rm -f "$POLICY_RC_D"
	created_policy=
}

# Everything of the machine's own state that the tests must never change: all
# of /etc (entries with mode, owner, size, link target, content hash), the
# live swap and vm settings and the netfilter rules. A listing rather than a bare hash, so a failure
# names what changed.
machine_state() {
	find /etc -xdev -printf '%p %m %U:%G %y %s %l\n' | LC_ALL=C sort
	find /etc -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	for f in /proc/sys/vm/swappiness /proc/sys/vm/overcommit_memory /proc/swaps; do
		echo "== $f"
		cat "$f"
	done
	echo "== netfilter"
	netfilter_rules
}

# This machine's firewall rules, as far as its tools are installed yet.
# iptables-save's comments carry the time of the listing.
netfilter_rules() {
	local save
	for save in iptables-save ip6tables-save; do
		if command -v "$save" >/dev/null; then
			"$save" | grep -v '^#' || true
		fi
	done
	if command -v nft >/dev/null; then
		nft list ruleset
	fi
}

# Installing ufw must leave this machine's firewall as it was: ufw off and
# no rule added.
check_ufw_left_off() {
	local missing=$1 rules_before=$2
	case " $missing " in
	*" ufw "*) ;;
	*) return 0 ;;
	esac
	if ! grep -qx 'ENABLED=no' /etc/ufw/ufw.conf || [ "$(netfilter_rules)" != "$rules_before" ]; then
		echo "test.sh: installing ufw turned on this machine's firewall; stopping" >&2
		exit 1
	fi
}

# firewalld for tests/pip_and_firewalld.rs, unpacked rather than installed:
# installing firewalld would enable its unit on this machine. The tests run
# it inside isolated hosts: the offline command on a host's /etc, and the
# daemon itself (with its Python D-Bus and GObject bindings) on a private
# system bus in a host's own network namespace. nftables and iptables give
# the commands with which the daemon test proves the machine's own
# netfilter unchanged.
FIREWALLD_OFFLINE=target/firewalld-offline
FIREWALLD_PACKAGES=(firewalld python3-firewall python3-nftables libnftables1 libnftnl11
	python3-dbus python3-gi gir1.2-glib-2.0 libgirepository-1.0-1
	nftables iptables libip4tc2 libip6tc2 libxtables12)
# The package list is kept beside the tree, so a tree unpacked from a
# shorter list is unpacked again.
unpack_firewalld_offline() {
	local stamp="$FIREWALLD_OFFLINE/.packages" debs deb
	[ "$(cat "$stamp" 2>/dev/null)" = "${FIREWALLD_PACKAGES[*]}" ] && return 0
	debs=$(mktemp -d)
	(cd "$debs" && apt-get download -qq "${FIREWALLD_PACKAGES[@]}" </dev/null)
	mkdir -p "$FIREWALLD_OFFLINE"
	for deb in "$debs"/*.deb; do
		dpkg-deb -x "$deb" "$FIREWALLD_OFFLINE"
	done
	rm -rf "$debs"
	echo "${FIREWALLD_PACKAGES[*]}" >"$stamp"
}

# The `ansible` package (ansible-core 2.17 and the collections it bundles,
# community.general and ansible.posix among them) for tests/vault.rs, which
# encrypts with the real ansible-vault, and for the tests that run Ansible's
# own modules and plugins, the corpus's among them (NODEPROV_ANSIBLE_VENV
# names another venv, used as it is). 2.17 still runs on Python 3.10+. The
# venv is made from the distribution's Python: one under /root (pyenv's)
# would vanish inside the isolated hosts, which hide /root, and the corpus
# checks run nodeprov, and so ansible-core, there.
ANSIBLE_VENV=${NODEPROV_ANSIBLE_VENV:-target/ansible-venv}
ANSIBLE_PACKAGE='ansible==10.*'
ANSIBLE_PYTHON=/usr/bin/python3
install_ansible_venv() {
	if [ -x "$ANSIBLE_VENV/bin/ansible-vault" ]; then
		[ -n "${NODEPROV_ANSIBLE_VENV:-}" ] && return 0
		if [ "$(readlink -f "$ANSIBLE_VENV/bin/python")" = "$(readlink -f "$ANSIBLE_PYTHON")" ] &&
			"$ANSIBLE_VENV/bin/python" -c 'import ansible_collections.community.general' 2>/dev/null; then
			return 0
		fi
		rm -rf "$ANSIBLE_VENV"
	fi
	echo "test.sh: installing $ANSIBLE_PACKAGE into $ANSIBLE_VENV"
	"$ANSIBLE_PYTHON" -m venv "$ANSIBLE_VENV"
	"$ANSIBLE_VENV/bin/pip" install -q "$ANSIBLE_PACKAGE"
}

# The oldest and the newest ansible-core users bring, for
# tests/ansible_versions.rs: 2.15 on the distribution's Python, and the
# newest `ansible` package (the newest ansible-core and the collections it
# bundles, which tests/corpus.rs validates the corpus with) on the newest
# Python here (it needs 3.12 or later, which the distribution may not
# have: pyenv's is looked for too). Each is made
# again when its Python changed; NODEPROV_ANSIBLE_{OLDEST,NEWEST}_VENV name
# other venvs, used as they are.
ANSIBLE_OLDEST_VENV=${NODEPROV_ANSIBLE_OLDEST_VENV:-target/ansible-core-oldest}
ANSIBLE_NEWEST_VENV=${NODEPROV_ANSIBLE_NEWEST_VENV:-target/ansible-core-newest}
install_core_venv() {
	local dir=$1 python=$2 spec=$3 holds=$4
	if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import $holds" 2>/dev/null &&
		[ "$(readlink -f "$dir/bin/python")" = "$(readlink -f "$python")" ]; then
		return 0
	fi
	rm -rf "$dir"
	echo "test.sh: installing $spec into $dir"
	"$python" -m venv "$dir"
	"$dir/bin/pip" install -q "$spec"
}

newest_python() {
	local p best= best_version=0
	for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 $(command -v python3.14 python3.13 python3.12 python3 || true); do
		[ -x "$p" ] || continue
		local v
		v=$("$p" -c 'import sys; print(sys.version_info[0] * 100 + sys.version_info[1])' 2>/dev/null) || continue
		if [ "$v" -gt "$best_version" ]; then
			best=$p best_version=$v
		fi
	done
	if [ "$best_version" -lt 312 ]; then
		echo "test.sh: the newest ansible-core needs Python 3.12 or later, and none was found" >&2
		exit 1
	fi
	echo "$best"
}

install_core_venvs() {
	if [ -z "${NODEPROV_ANSIBLE_OLDEST_VENV:-}" ]; then
		install_core_venv "$ANSIBLE_OLDEST_VENV" "$ANSIBLE_PYTHON" 'ansible-core==2.15.*' ansible.release
	fi
	if [ -z "${NODEPROV_ANSIBLE_NEWEST_VENV:-}" ]; then
		install_core_venv "$ANSIBLE_NEWEST_VENV" "$(newest_python)" ansible ansible_collections.community.general
	fi
}

# The integration targets of the ansible-core release tests/conformance.rs
# is held against (its record's first line names it), from its source
# distribution on PyPI: downloaded, not vendored (GPL-3.0).
CONFORMANCE_RECORD=tests/conformance/record.tsv
fetch_conformance_targets() {
	local version dir tmp
	version=$(sed -n '1s/^# ansible-core //p' "$CONFORMANCE_RECORD")
	dir=target/ansible-core-targets/$version
	[ -d "$dir/test/integration/targets" ] && return 0
	echo "test.sh: downloading ansible-core $version's integration targets"
	tmp=$(mktemp -d)
	"$ANSIBLE_NEWEST_VENV/bin/pip" download -q --no-deps --no-binary :all: \
		"ansible-core==$version" -d "$tmp"
	mkdir -p "$dir"
	tar -xzf "$tmp"/ansible_core-"$version".tar.gz -C "$dir" --strip-components=1 \
		"ansible_core-$version/test/integration/targets"
	rm -rf "$tmp"
}

# Taken after installing packages: apt legitimately rewrites /etc (ld.so.cache,
# alternatives) and that is not the tests' doing.
install_missing_packages
unpack_firewalld_offline
install_ansible_venv
install_core_venvs
fetch_conformance_targets
before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
machine_state >"$before"

cargo fmt --check
vm_log=
if vm_tests_wanted; then
	# The VM tests are the longest chain of the run (a VM under TCG, since
	# KVM is unusable here, keeps one core busy for most of it), so they
	# start first, as soon as their binary is built, one VM at a time; the
	# other checks fill the other core beside them. Their output is shown
	# when both are done; a check that fails before then stops them.
	cargo test --test vm_e2e --no-run
	vm_log=$(mktemp)
	setsid cargo test --test vm_e2e -- --ignored --test-threads=1 >"$vm_log" 2>&1 &
	vm_pid=$!
	trap 'rm -f "$before" "$after"; kill -- -"$vm_pid" 2>/dev/null || true' EXIT
fi
cargo clippy --all-targets -- -D warnings
# The release artefacts, which tests/dist.rs installs and runs.
scripts/dist.sh
cargo test --no-run
tests_rc=0
cargo test || tests_rc=$?
if [ -n "$vm_log" ]; then
	vm_rc=0
	wait "$vm_pid" || vm_rc=$?
	echo "== VM tests (tests/vm_e2e.rs)"
	cat "$vm_log"
	rm -f "$vm_log"
	if [ "$vm_rc" -ne 0 ]; then
		echo "test.sh: FAILED: the VM tests (above)" >&2
		exit 1
	fi
fi
if [ "$tests_rc" -ne 0 ]; then
	echo "test.sh: FAILED: cargo test (above)" >&2
	exit 1
fi

machine_state >"$after"
if ! diff -u "$before" "$after"; then
	echo >&2
	echo "test.sh: FAILED: the test run changed this machine's /etc, swap, vm settings or firewall (diff above)" >&2
	exit 1
fi
echo "test.sh: all checks passed; machine state unchanged"
