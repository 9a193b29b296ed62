#!/bin/sh
# Runs ansible-playbook on every corpus case, as tests/corpus.rs runs nodeprov:
# `--syntax-check` (touches no host), then `--check -c local` inside an
# isolated host made with tests/support/enter-host.sh (private /etc, /root,
# /tmp, /run, /var/log, a fake /proc/sys/vm, everything else read-only), so
# ansible can never change this machine. Prints one line per case and the
# totals; needs root and util-linux unshare.
#
# usage: tests/corpus/compare-ansible.sh [CASE_GLOB]
# CORPUS_DEBUG=1 prints ansible's whole output for each failed check.
# ANSIBLE_VENV (default ~/.cache/nodeprov-corpus/venv) holds the pinned
# `ansible` package (ansible-core plus the collections the cases name);
# it is created when missing.
set -eu

corpus=$(cd "$(dirname "$0")" && pwd)
enter=$corpus/../support/enter-host.sh
venv=${ANSIBLE_VENV:-$HOME/.cache/nodeprov-corpus/venv}
python=${NODEPROV_BENCH_PYTHON:-/root/.pyenv/versions/3.12.1/bin/python3}
pin=ansible==14.5.0
timeout_s=300

if [ ! -x "$venv/bin/ansible-playbook" ]; then
	"$python" -m venv "$venv"
	"$venv/bin/pip" install -q "$pin"
fi

# The venv's interpreter links into this Python's prefix, which may lie under
# /root: both must stay visible in the host.
base_python=$("$venv/bin/python" -c 'import sys; print(sys.base_prefix)')

# Inside the host: what enter-host.sh does not make private becomes read-only.
inner='set -eu
for dir in /usr /var /opt /home /srv /boot /work; do
	[ -d "$dir" ] && mount -n --bind "$dir" "$dir" && mount -n -o remount,bind,ro "$dir"
done
exec "$@"'

export ANSIBLE_NOCOLOR=1 ANSIBLE_NO_TARGET_SYSLOG=1 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0

first_error() {
	grep -m1 -E '^(fatal|ERROR|\[ERROR\])|FAILED!' "$1" | cut -c1-200 || true
}

in_host() {
	root=$(mktemp -d /tmp/corpus-host.XXXXXX)
	vm=$(mktemp -d /dev/shm/corpus-vm.XXXXXX)
	cp -a /etc "$root/etc"
	mkdir -p "$root/root" "$root/tmp" "$root/run" "$root/var/log"
	chmod 700 "$root/root"
	chmod 1777 "$root/tmp"
	for knob in /proc/sys/vm/*; do
		cat "$knob" >"$vm/${knob##*/}" 2>/dev/null || : >"$vm/${knob##*/}"
	done
	rc=0
	env -i PATH="$PATH" HOME=/root LC_ALL=C.UTF-8 ANSIBLE_NOCOLOR=1 ANSIBLE_NO_TARGET_SYSLOG=1 \
		ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_LOCALHOST_WARNING=0 \
		unshare --mount --propagation private --pid --fork --kill-child --uts --mount-proc \
		/bin/sh "$enter" "$root" "$vm" corpus-host --keep "$venv" --keep "$base_python" -- \
		/bin/sh -c "$inner" inner "$@" </dev/null || rc=$?
	rm -rf "$root" "$vm"
	return $rc
}

total=0 syntax_ok=0 check_ok=0
log=$(mktemp)
for case in "$corpus"/${1:-[0-9]*}/; do
	case=${case%/}
	name=${case##*/}
	total=$((total + 1))
	cd "$case"
	if "$venv/bin/ansible-playbook" --syntax-check -i localhost, play.yml >"$log" 2>&1; then
		syntax_ok=$((syntax_ok + 1))
		syntax=ok
	else
		syntax="error: $(first_error "$log")"
	fi
	rc=0
	in_host timeout "$timeout_s" "$venv/bin/ansible-playbook" --check -c local -i localhost, \
		-e ansible_python_interpreter="$venv/bin/python" "$case/play.yml" >"$log" 2>&1 || rc=$?
	if [ "$rc" = 0 ]; then
		check_ok=$((check_ok + 1))
		check=ok
	else
		check="exit $rc: $(first_error "$log")"; [ -n "${CORPUS_DEBUG-}" ] && cat "$log"
	fi
	echo "$name: syntax-check $syntax; check $check"
done
rm -f "$log"
echo "ansible-playbook: $syntax_ok/$total syntax-check, $check_ok/$total check clean"
