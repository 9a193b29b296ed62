#!/usr/bin/env bash
# Builds every release artefact into dist/:
#   dist/nodeprov                         the static binary (musl, OpenSSL and
#                                         libssh2 built in): runs on any x86_64
#                                         Linux controller, whatever its glibc
#   dist/nodeprov_VERSION-1_amd64.deb     Debian and Ubuntu
#   dist/nodeprov-VERSION-1.x86_64.rpm    EL 7, 8, 9 and Fedora
# The packages carry that same binary, the man page and shell completions
# generated from it, the shipped playbooks and templates, and the licence;
# what goes where is the one list below (ASSETS), and the packages are made
# by the distributions' own dpkg-deb and rpmbuild, which the tests install
# anyway: no packaging tool to compile first.
#
# Needs musl-gcc (Debian: musl-tools), dpkg-deb and rpmbuild (Debian: rpm).
# Adds the rustup target when it is missing.
set -euo pipefail

cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
STAGE=target/dist-stage
SUMMARY="Agentless, Ansible-shaped provisioning for GPU server fleets"
DESCRIPTION="Playbooks and inventories shaped like Ansible's, applied over SSH in a
constant number of round trips per host, with a truthful check mode and a GPU
smoke test. Ships the GPU node, sysctl rollout and compliance playbooks under
/usr/share/nodeprov."
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)

for tool in musl-gcc dpkg-deb rpmbuild; do
	if ! command -v "$tool" >/dev/null; then
		echo "dist.sh: $tool is missing (Debian: apt-get install musl-tools dpkg-dev rpm)" >&2
		exit 1
	fi
done
if ! rustup target list --installed | grep -qx "$TARGET"; then
	rustup target add "$TARGET"
fi

# Stripped here rather than in [profile.release], which the dynamic build
# and the tests share.
CARGO_PROFILE_RELEASE_STRIP=true cargo build --release --locked --target "$TARGET"
binary=target/$TARGET/release/nodeprov

rm -rf "$STAGE" dist
mkdir -p "$STAGE/assets" dist
"$binary" man >"$STAGE/assets/nodeprov.1"
"$binary" completions bash >"$STAGE/assets/nodeprov.bash"
"$binary" completions zsh >"$STAGE/assets/_nodeprov"
"$binary" completions fish >"$STAGE/assets/nodeprov.fish"
cp "$binary" dist/nodeprov

# What each package installs: source, mode, destination. Destinations with
# a `|` are the .deb's and the .rpm's, where the distributions differ.
ASSETS=(
	"dist/nodeprov 755 /usr/bin/nodeprov"
	"$STAGE/assets/nodeprov.1 644 /usr/share/man/man1/nodeprov.1"
	"$STAGE/assets/nodeprov.bash 644 /usr/share/bash-completion/completions/nodeprov"
	"$STAGE/assets/_nodeprov 644 /usr/share/zsh/vendor-completions/_nodeprov|/usr/share/zsh/site-functions/_nodeprov"
	"$STAGE/assets/nodeprov.fish 644 /usr/share/fish/vendor_completions.d/nodeprov.fish"
	"LICENSE 644 /usr/share/doc/nodeprov/copyright|/usr/share/licenses/nodeprov/LICENSE"
)
for f in playbooks/*.yml playbooks/*.ini playbooks/roles/nvidia_gpu/*/* templates/*; do
	ASSETS+=("$f 644 /usr/share/nodeprov/$f")
done

# Lays the assets out under $1 as the package kind $2 (deb or rpm) places
# them, and prints each destination.
stage_tree() {
	local root=$1 kind=$2 entry src mode dest
	for entry in "${ASSETS[@]}"; do
		read -r src mode dest <<<"$entry"
		case "$kind:$dest" in
		deb:*"|"*) dest=${dest%|*} ;;
		rpm:*"|"*) dest=${dest#*|} ;;
		esac
		install -D -m "$mode" "$src" "$root$dest"
		echo "$dest"
	done
}

# The .deb: the tree, its control file and md5sums, owned by root.
deb=$STAGE/deb
stage_tree "$deb" deb >/dev/null
gzip -9n "$deb/usr/share/man/man1/nodeprov.1"
mkdir -p "$deb/DEBIAN"
(cd "$deb" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$deb/DEBIAN/md5sums"
{
	echo "Package: nodeprov"
	echo "Version: $VERSION-1"
	echo "Architecture: amd64"
	echo "Section: admin"
	echo "Priority: optional"
	echo "Maintainer: nodeprov developers"
	echo "Installed-Size: $(du -sk --exclude=DEBIAN "$deb" | cut -f1)"
	echo "Description: $SUMMARY"
	sed 's/^/ /' <<<"$DESCRIPTION"
} >"$deb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$deb" "dist/nodeprov_${VERSION}-1_amd64.deb" >/dev/null

# The .rpm: rpmbuild copies the staged tree in; no requirement is derived,
# nothing is stripped or split off, and the payload is gzip, not zstd, which
# CentOS 7's rpm 4.11 cannot unpack.
rpm_top=$(realpath -m "$STAGE/rpm")
mkdir -p "$rpm_top/SPECS" "$rpm_top/tree"
files=$(stage_tree "$rpm_top/tree" rpm)
cat >"$rpm_top/SPECS/nodeprov.spec" <<SPEC
Name: nodeprov
Version: $VERSION
Release: 1
Summary: $SUMMARY
License: Apache-2.0
BuildArch: x86_64
AutoReqProv: no

%description
$DESCRIPTION

%install
cp -a $rpm_top/tree/. %{buildroot}/

%files
$files
SPEC
rpmbuild -bb --quiet \
	--define "_topdir $rpm_top" \
	--define "_binary_payload w9.gzdio" \
	--define "__os_install_post %{nil}" \
	--define "debug_package %{nil}" \
	--define "_build_id_links none" \
	"$rpm_top/SPECS/nodeprov.spec"
cp "$rpm_top"/RPMS/x86_64/nodeprov-"$VERSION"-1.x86_64.rpm dist/
ls -l dist/
