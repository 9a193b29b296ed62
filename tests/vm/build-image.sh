#!/usr/bin/env bash
# Builds (once) the Debian 12 VM image the real-VM tests boot, and prints the
# path prefix of the built files on stdout:
#
#   PREFIX.qcow2         root filesystem: raw ext4, no partition table
#   PREFIX.vmlinuz       kernel and initrd, booted with qemu -kernel/-initrd so
#   PREFIX.initrd        the image needs no bootloader
#   PREFIX-xfs.qcow2     data disks mounted at /mnt/xfs and /mnt/btrfs
#   PREFIX-btrfs.qcow2
#
# The prefix carries a hash of this script and of the test public key, so any
# change to the recipe builds a new image and an unchanged one is reused. The
# test key pair (id_ed25519) lives in the cache directory, never in the repo.
#
# Needs root (debootstrap chroots), debootstrap, e2fsprogs >= 1.43 (mkfs.ext4
# -d), xfsprogs, btrfs-progs and qemu-img. Writes only under the cache dir.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

CACHE=${NODEPROV_VM_CACHE:-$HOME/.cache/nodeprov-vm}
SUITE=bookworm
KEY="$CACHE/id_ed25519"

# debootstrap's own resolver takes the first of alternative dependencies and
# misorders configuration (polkitd, which tuned needs, fails under it), so it
# lays down only a bootable base and apt installs the rest.
BASE_PACKAGES=(adduser systemd systemd-sysv dbus udev kmod)
PACKAGES=(
	linux-image-amd64 initramfs-tools openssh-server sudo tuned
	xfsprogs btrfs-progs procps util-linux iproute2 socat
	selinux-policy-default selinux-utils policycoreutils policycoreutils-python-utils
)

log() { echo "build-image: $*" >&2; }

# The bookworm main repository this machine's apt already uses, so the image
# comes from the same (possibly local or pinned) mirror.
mirror_uri() {
	local uri=""
	shopt -s nullglob
	local sources=(/etc/apt/sources.list.d/*.sources)
	shopt -u nullglob
	if [ ${#sources[@]} -gt 0 ]; then
		uri=$(deb822_mirror "${sources[@]}")
	fi
	if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
		uri=$(one_line_mirror /etc/apt/sources.list)
	fi
	if [ -z "$uri" ]; then
		log "no '$SUITE main' repository in this machine's apt sources"
		exit 1
	fi
	echo "$uri"
}

deb822_mirror() {
	awk -v suite="$SUITE" '
		BEGIN { RS = ""; FS = "\n" }
		{
			delete f
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^[ \t]*#/ || $i !~ /:/) continue
				key = tolower(substr($i, 1, index($i, ":") - 1))
				f[key] = " " substr($i, index($i, ":") + 1) " "
				gsub(/[ \t]+/, " ", f[key])
			}
			if (f["enabled"] ~ / no /) next
			if (f["types"] ~ / deb / && f["suites"] ~ (" " suite " ") && f["components"] ~ / main /) {
				split(f["uris"], u, " ")
				print u[1]
				exit
			}
		}' "$@"
}

one_line_mirror() {
	awk -v suite="$SUITE" '
		$1 != "deb" { next }
		{
			i = 2
			if ($i ~ /^\[/) while ($i !~ /\]$/) i++
			if ($i ~ /^\[/ || $i ~ /\]$/) i++
			uri = $i; dist = $(i + 1)
			for (j = i + 2; j <= NF; j++)
				if (dist == suite && $j == "main") { print uri; exit }
		}' "$1"
}

ensure_key() {
	[ -f "$KEY" ] && return 0
	ssh-keygen -q -t ed25519 -N "" -C nodeprov-vm-test -f "$KEY"
}

recipe_hash() {
	cat "$0" "$KEY.pub" | sha256sum | cut -c1-16
}

# Runs in a private mount namespace (see main): debootstrap and the chroot
# commands mount /proc inside the tree, and those mounts must vanish with the
# namespace instead of lingering on the build machine.
bootstrap() {
	local root=$1 mirror=$2
	local include
	include=$(
		IFS=,
		echo "${BASE_PACKAGES[*]}"
	)
	debootstrap --variant=minbase --include="$include" "$SUITE" "$root" "$mirror" >&2 || {
		tail -n 30 "$root/debootstrap/debootstrap.log" >&2
		exit 1
	}
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	mount -t proc proc "$root/proc"
	chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${PACKAGES[@]}" </dev/null >&2
	umount "$root/proc"
	rm -f "$root/etc/resolv.conf"
	configure_guest "$root"
}

configure_guest() {
	local root=$1
	echo nodeprov-vm >"$root/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 nodeprov-vm\n' >"$root/etc/hosts"
	# A fixed id keeps systemd from treating every overlay's boot as a first
	# boot (which re-runs presets and could flip unit enablement).
	echo 5e1f4c0a9d6b4e2f8a7c3b1d0e9f8a7c >"$root/etc/machine-id"
	cat >"$root/etc/fstab" <<-'EOF'
		/dev/vda / ext4 rw,errors=remount-ro 0 1
		LABEL=nodeprov-xfs /mnt/xfs xfs defaults,nofail 0 2
		LABEL=nodeprov-btrfs /mnt/btrfs btrfs defaults,nofail 0 0
	EOF
	mkdir -p "$root/mnt/xfs" "$root/mnt/btrfs"
	configure_network "$root"
	configure_users "$root"
	configure_services "$root"
	configure_tuned "$root"
	# Debian ships this link already; the sysctl module's precedence rules
	# expect it, so fail the build rather than test against a different layout.
	[ "$(readlink "$root/etc/sysctl.d/99-sysctl.conf")" = ../sysctl.conf ] || {
		log "/etc/sysctl.d/99-sysctl.conf is not a link to ../sysctl.conf"
		exit 1
	}
	rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
	label_for_selinux "$root"
}

# SELinux stays off unless a test boots with `security=selinux`: then the
# policy is enforced on files labelled here, at build time, as an installer
# labels them (a first-boot relabel would cost minutes under TCG). The
# config says enforcing so that such a boot is a RHEL-like enforcing host.
label_for_selinux() {
	local root=$1
	cat >"$root/etc/selinux/config" <<-'EOF'
		SELINUX=enforcing
		SELINUXTYPE=default
	EOF
	mount -t proc proc "$root/proc"
	chroot "$root" setfiles -F -e /proc -e /sys -e /dev \
		/etc/selinux/default/contexts/files/file_contexts / >&2
	umount "$root/proc"
}

configure_network() {
	local root=$1
	cat >"$root/etc/systemd/network/10-user-nic.network" <<-'EOF'
		[Match]
		Name=en* eth*

		[Network]
		DHCP=ipv4
	EOF
	chroot "$root" systemctl enable systemd-networkd.service >&2
	# Nothing waits on the network but sshd, and networkd-wait-online would
	# hold the boot for minutes under TCG if DHCP were slow.
	chroot "$root" systemctl disable systemd-networkd-wait-online.service >&2 || true
}

configure_users() {
	local root=$1 user
	install -d -m 700 "$root/root/.ssh"
	install -m 600 "$KEY.pub" "$root/root/.ssh/authorized_keys"
	for user in deploy ops; do
		chroot "$root" useradd -m -s /bin/bash "$user"
		install -d -m 700 "$root/home/$user/.ssh"
		install -m 600 "$KEY.pub" "$root/home/$user/.ssh/authorized_keys"
		chroot "$root" chown -R "$user:$user" "/home/$user/.ssh"
	done
	# deploy: sudo with a password, the become_password path.
	chroot "$root" usermod -aG sudo deploy
	echo deploy:deploy-pass | chroot "$root" chpasswd
	# ops: passwordless sudo, the plain become path.
	echo 'ops ALL=(ALL:ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/ops"
	chmod 440 "$root/etc/sudoers.d/ops"
}

# Units with the shapes the service module must handle: two enabled daemons
# that really listen (the playbook's redundant services), a static unit pulled
# in by a .wants link, and a socket-activated service.
configure_services() {
	local root=$1
	local units="$root/etc/systemd/system"
	listener_unit httpd 80 >"$units/httpd.service"
	listener_unit mysqld 3306 >"$units/mysqld.service"
	cat >"$units/nodeprov-static.service" <<-'EOF'
		[Unit]
		Description=Static unit without [Install] (nodeprov test)

		[Service]
		ExecStart=/bin/sleep infinity
	EOF
	cat >"$units/foo.socket" <<-'EOF'
		[Unit]
		Description=Socket activating foo.service (nodeprov test)

		[Socket]
		ListenStream=127.0.0.1:7777

		[Install]
		WantedBy=sockets.target
	EOF
	cat >"$units/foo.service" <<-'EOF'
		[Unit]
		Description=Socket-activated service (nodeprov test)
		Requires=foo.socket

		[Service]
		ExecStart=/bin/sleep infinity
	EOF
	# Pulled in by a drop-in rather than a .wants link: systemctl calls a unit
	# with links in /etc "enabled" even without [Install], and this one must
	# read "static" like the distribution's own static units.
	mkdir -p "$units/multi-user.target.d"
	printf '[Unit]\nWants=nodeprov-static.service\n' >"$units/multi-user.target.d/nodeprov-static.conf"
	chroot "$root" systemctl enable httpd.service mysqld.service foo.socket >&2
}

listener_unit() {
	local name=$1 port=$2
	cat <<-EOF
		[Unit]
		Description=Dummy $name listening on $port (nodeprov test)
		After=network.target

		[Service]
		ExecStart=/usr/bin/socat TCP-LISTEN:$port,reuseaddr,fork "SYSTEM:echo $name"

		[Install]
		WantedBy=multi-user.target
	EOF
}

# RHEL-like: tuned active with a profile whose swappiness (30) differs from
# both the kernel default and the playbook's target.
configure_tuned() {
	local root=$1
	mkdir -p "$root/etc/tuned/nodeprov-test"
	cat >"$root/etc/tuned/nodeprov-test/tuned.conf" <<-'EOF'
		[main]
		summary=nodeprov VM test profile

		[sysctl]
		vm.swappiness=30
	EOF
	echo nodeprov-test >"$root/etc/tuned/active_profile"
	echo manual >"$root/etc/tuned/profile_mode"
	chroot "$root" systemctl enable tuned.service >&2
}

build() {
	local prefix=$1 work mirror
	mirror=$(mirror_uri)
	work=$(mktemp -d "$CACHE/build.XXXXXX")
	# shellcheck disable=SC2064 # expand now: $work is local
	trap "rm -rf '$work'" EXIT
	log "debootstrap $SUITE from $mirror into $work"
	unshare --mount --propagation private bash "$0" --bootstrap "$work/root" "$mirror"
	cp "$work"/root/boot/vmlinuz-* "$work/vmlinuz"
	cp "$work"/root/boot/initrd.img-* "$work/initrd"
	make_root_disk "$work/root" "$work/root.qcow2"
	make_data_disk xfs "$work/xfs.qcow2"
	make_data_disk btrfs "$work/btrfs.qcow2"
	# Renamed last, so a half-finished build never looks like a cached one.
	mv "$work/vmlinuz" "$prefix.vmlinuz"
	mv "$work/initrd" "$prefix.initrd"
	mv "$work/xfs.qcow2" "$prefix-xfs.qcow2"
	mv "$work/btrfs.qcow2" "$prefix-btrfs.qcow2"
	mv "$work/root.qcow2" "$prefix.qcow2"
}

# mkfs.ext4 -d fills the filesystem from a directory: no loop device, no mount.
make_root_disk() {
	local tree=$1 out=$2
	mkfs.ext4 -q -F -L nodeprov-root -d "$tree" "$out.raw" 4G >&2
	qemu-img convert -f raw -O qcow2 "$out.raw" "$out"
	rm -f "$out.raw"
}

make_data_disk() {
	local fs=$1 out=$2
	truncate -s 1G "$out.raw"
	"mkfs.$fs" -q -L "nodeprov-$fs" "$out.raw" >&2
	qemu-img convert -f raw -O qcow2 "$out.raw" "$out"
	rm -f "$out.raw"
}

# Images of older recipes are never booted again; each is about 1 GiB.
remove_stale_images() {
	local keep=$1 f
	for f in "$CACHE"/debian12-*; do
		case $f in "$keep".* | "$keep"-*) ;; *) rm -f "$f" ;; esac
	done
}

main() {
	if [ "${1:-}" = --bootstrap ]; then
		bootstrap "$2" "$3"
		return
	fi
	mkdir -p "$CACHE"
	# Test binaries may start in parallel; one builds, the others wait for it.
	exec 9>"$CACHE/build.lock"
	flock 9
	ensure_key
	local prefix
	prefix="$CACHE/debian12-$(recipe_hash)"
	if [ ! -f "$prefix.qcow2" ]; then
		local start=$SECONDS
		build "$prefix"
		log "built $prefix.qcow2 in $((SECONDS - start))s"
		remove_stale_images "$prefix"
	fi
	echo "$prefix"
}

main "$@"
