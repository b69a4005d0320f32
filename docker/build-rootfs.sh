#!/bin/sh
# Build a minimal Debian root filesystem tarball for the sandbox image when no
# container registry is reachable. The tarball is cached: a second build with
# the same suite and mirror reuses it.
#
# usage: build-rootfs.sh OUTPUT_TARBALL [MIRROR] [SUITE]
#   MIRROR defaults to the first Debian mirror this machine's apt uses.
#   SUITE defaults to the machine's codename (bookworm on Debian 12).
set -eu

out="${1:?usage: build-rootfs.sh OUTPUT_TARBALL [MIRROR] [SUITE]}"
mirror="${2:-}"
suite="${3:-}"

if [ -z "$mirror" ]; then
    # deb822 sources first (Debian 12), then the classic one-line format.
    mirror="$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{print $2}' | grep -v security | head -n1 || true)"
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror="$(awk '$1 == "deb" {print $2}' /etc/apt/sources.list | grep -v security | head -n1 || true)"
fi
if [ -z "$mirror" ]; then
    echo "build-rootfs: no apt mirror found in /etc/apt; pass one as the second argument" >&2
    exit 2
fi
if [ -z "$suite" ]; then
    suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
fi
command -v debootstrap >/dev/null 2>&1 || {
    echo "build-rootfs: debootstrap is not installed (apt-get install -y debootstrap)" >&2
    exit 2
}

work="$(mktemp -d "${TMPDIR:-/tmp}/synthorg-rootfs.XXXXXX")"
trap 'rm -rf "$work"' EXIT INT TERM
root="$work/root"

debootstrap --variant=minbase \
    --include=python3,git,bash,coreutils,ca-certificates \
    "$suite" "$root" "$mirror"

# The unprivileged user every sandboxed command runs as (uid/gid 10001).
chroot "$root" groupadd --gid 10001 sandbox
chroot "$root" useradd --uid 10001 --gid 10001 --home-dir /home/sandbox \
    --create-home --shell /bin/bash sandbox
mkdir -p "$root/workspace"
chown 10001:10001 "$root/workspace"

# Shrink the image: package caches and docs are not needed at run time.
chroot "$root" apt-get clean
rm -rf "$root/var/lib/apt/lists/"* "$root/usr/share/doc/"* "$root/usr/share/man/"* \
    "$root/usr/share/info/"* "$root/var/cache/debconf/"*-old "$root/var/log/"*

mkdir -p "$(dirname "$out")"
tar --numeric-owner -C "$root" -cf "$out.partial" .
mv "$out.partial" "$out"
echo "build-rootfs: wrote $out"
