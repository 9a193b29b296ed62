#!/usr/bin/env bash
# Builds every release artefact into dist/:
#   dist/nodeprov                         the static binary (musl, OpenSSL and
#                                         libssh2 built in): runs on any x86_64
#                                         Linux controller, whatever its glibc
#   dist/nodeprov_VERSION-1_amd64.deb     Debian and Ubuntu
#   dist/nodeprov-VERSION-1.x86_64.rpm    EL 7, 8, 9 and Fedora
# The packages carry that same binary, the man page and shell completions
# generated from it, the shipped playbooks and templates, and the licence;
# their contents are declared in Cargo.toml's [package.metadata.*].
#
# Needs musl-gcc (Debian: musl-tools). Adds the rustup target and installs
# cargo-deb and cargo-generate-rpm (pinned, --locked) when they are missing.
set -euo pipefail

cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
# Pinned, so two machines package alike.
TOOLS=("cargo-deb 3.8.0" "cargo-generate-rpm 0.21.1")
ASSETS=target/dist-assets

if ! command -v musl-gcc >/dev/null; then
	echo "dist.sh: musl-gcc is missing (Debian: apt-get install musl-tools)" >&2
	exit 1
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
	rustup target add "$TARGET"
fi
for entry in "${TOOLS[@]}"; do
	read -r tool version <<<"$entry"
	if ! cargo install --list | grep -qx "$tool v$version:"; then
		# --debug: both compile in 4.5 min on 2 cores (release builds took
		# 17, on a busier machine) and package as fast as release builds
		# (measured: 7.5 s for the .deb, 10 s for the .rpm).
		cargo install --locked --debug --quiet "$tool" --version "$version"
	fi
done

# Stripped here rather than in [profile.release], which the dynamic build
# and the tests share.
CARGO_PROFILE_RELEASE_STRIP=true cargo build --release --locked --target "$TARGET"
binary=target/$TARGET/release/nodeprov

rm -rf "$ASSETS" dist
mkdir -p "$ASSETS" dist
"$binary" man >"$ASSETS/nodeprov.1"
"$binary" completions bash >"$ASSETS/nodeprov.bash"
"$binary" completions zsh >"$ASSETS/_nodeprov"
"$binary" completions fish >"$ASSETS/nodeprov.fish"

cp "$binary" dist/nodeprov
cargo deb --quiet --no-build --no-strip --target "$TARGET" --output dist/
# gzip, not the default zstd: CentOS 7's rpm 4.11 cannot unpack zstd.
cargo generate-rpm --payload-compress gzip --target "$TARGET" --output dist/
ls -l dist/
