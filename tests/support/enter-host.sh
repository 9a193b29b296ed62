#!/bin/sh
# Runs as PID 1 of the fresh mount/pid/uts namespaces that IsolatedHost::run makes
# with `unshare` (see mod.rs). It lays the host's private tree over the machine's
# mutable state, then execs the command, so nothing the command does can reach the
# real /etc, /root, /tmp, /run, /var/log or kernel settings.
#
# usage: enter-host.sh ROOT VMDIR HOSTNAME [--keep PATH]... [--private DIR]... [--own-usr] [--own-network] -- COMMAND [ARG]...
#   ROOT   host tree holding etc/ root/ tmp/ run/ var/log/
#   VMDIR  plain files standing in for /proc/sys/vm
#   --keep a real directory under /etc, /root, /tmp or /run that must stay visible
#          (the binary under test, the caller's working directory)
#   --private DIR  one more machine directory (relative, e.g. var/lib/dpkg) that
#          ROOT/DIR covers, for hosts whose package manager keeps state there
#   --own-usr  /usr becomes an overlay whose writes land in ROOT/usr-upper, so a
#          package manager can install into the host's /usr and the machine's
#          stays as it was
#   --own-network  the command runs in a network namespace of its own, whose
#          /proc/sys/net is left writable (a firewall sets ip_forward there)
set -eu

# 125 tells the harness that the namespace was never built, so a broken harness
# is not mistaken for the command under test failing.
fail() {
	echo "enter-host: $*" >&2
	exit 125
}

[ $# -ge 5 ] || fail "usage: enter-host.sh ROOT VMDIR HOSTNAME [--keep PATH]... -- COMMAND..."
root=$1 vmdir=$2 name=$3
shift 3
cwd=$(pwd)

# Relative paths below resolve against ROOT through this working directory even
# after /tmp, which usually holds ROOT, has been covered.
cd "$root" || fail "no host tree at $root"

while [ "${1-}" = --keep ] && [ $# -ge 2 ]; do
	keep=$2
	shift 2
	# Mounted into the private tree first so the --rbind below carries it along.
	mkdir -p "./$keep" && mount -n --bind "$keep" "./$keep" || fail "cannot keep $keep visible"
done
private=
while [ "${1-}" = --private ] && [ $# -ge 2 ]; do
	private="$private $2"
	shift 2
done
own_usr=
if [ "${1-}" = --own-usr ]; then
	own_usr=1
	shift
fi
own_network=
if [ "${1-}" = --own-network ]; then
	own_network=1
	shift
fi
[ "${1-}" = -- ] || fail "expected -- before the command, got ${1-nothing}"
shift
[ $# -ge 1 ] || fail "no command to run"

# The UTS namespace makes this name private; set it while /proc/sys is still writable.
printf '%s\n' "$name" >/proc/sys/kernel/hostname || fail "cannot set hostname"

# --mount-proc gave us our own /proc, but /proc/sys still reaches the real kernel:
# freeze it, then expose only the fake vm directory as writable.
mount -n --bind /proc/sys /proc/sys && mount -n -o remount,bind,ro /proc/sys || fail "cannot make /proc/sys read-only"
mount -n --bind "$vmdir" /proc/sys/vm || fail "cannot bind fake vm dir $vmdir"
# /proc/sys/net shows the network namespace of whoever reads it: with one of
# our own it is ours to write.
if [ -n "$own_network" ]; then
	mount -n --bind /proc/sys/net /proc/sys/net && mount -n -o remount,bind,rw /proc/sys/net ||
		fail "cannot make /proc/sys/net writable"
fi

if [ -n "$own_usr" ]; then
	mkdir -p usr-upper usr-work &&
		mount -n -t overlay overlay -o "lowerdir=/usr,upperdir=$root/usr-upper,workdir=$root/usr-work" /usr ||
		fail "cannot lay an overlay over /usr"
fi

for dir in etc root run tmp var/log $private; do
	mount -n --rbind "./$dir" "/$dir" || fail "cannot cover /$dir"
done

cd "$cwd" 2>/dev/null || cd /
exec "$@"
