#!/usr/bin/env bash
# Runs every check the project has: formatting, clippy and all tests, including
# the integration tests that provision isolated hosts (tests/support). Those run
# as root in private namespaces; this script proves afterwards that the machine
# running them was left alone, and fails loudly if it was not.
set -euo pipefail

cd "$(dirname "$0")/.."
# sysctl and mount live in sbin, which non-login shells may leave off PATH; the
# isolated hosts inherit this PATH too.
export PATH="$PATH:/usr/sbin:/sbin"

# Commands the tests run, and the Debian package that provides each.
REQUIRED_COMMANDS=(
	"sysctl procps"
	"unshare util-linux"
	"mount mount"
	"sshd openssh-server"
	"ssh-keygen openssh-client"
	"ssh-agent openssh-client"
	"sudo sudo"
	"useradd passwd"
)

missing_packages() {
	local entry cmd package
	for entry in "${REQUIRED_COMMANDS[@]}"; do
		read -r cmd package <<<"$entry"
		command -v "$cmd" >/dev/null || echo "$package"
	done
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
	forbid_service_starts
	apt-get update -qq </dev/null
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y -qq --no-install-recommends $missing </dev/null
	restore_service_policy
}

# Installing openssh-server must not start a real sshd on this machine (the
# tests start their own, in namespaces): invoke-rc.d asks policy-rc.d, and 101
# means "not allowed". A policy already in place is left as it is.
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
# of /etc (entries with mode, owner, size, link target, content hash) and the
# live swap and vm settings. A listing rather than a bare hash, so a failure
# names what changed.
machine_state() {
	find /etc -xdev -printf '%p %m %U:%G %y %s %l\n' | LC_ALL=C sort
	find /etc -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	for f in /proc/sys/vm/swappiness /proc/sys/vm/overcommit_memory /proc/swaps; do
		echo "== $f"
		cat "$f"
	done
}

# Taken after installing packages: apt legitimately rewrites /etc (ld.so.cache,
# alternatives) and that is not the tests' doing.
install_missing_packages
before=$(mktemp)
after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
machine_state >"$before"

cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test

machine_state >"$after"
if ! diff -u "$before" "$after"; then
	echo >&2
	echo "test.sh: FAILED: the test run changed this machine's /etc, swap or vm settings (diff above)" >&2
	exit 1
fi
echo "test.sh: all checks passed; machine state unchanged"
