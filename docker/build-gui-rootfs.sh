#!/bin/sh
# Build the root filesystem tarball of the GUI sandbox image (browser and desktop
# categories on the docker backend): the plain sandbox root filesystem plus Debian's
# Chromium, Xvfb, xdotool, scrot, a few X programs and fonts. The tarball is cached
# like the plain one: a second build with the same recipe and base reuses it.
#
# usage: build-gui-rootfs.sh OUTPUT_TARBALL BASE_TARBALL MIRROR [SUITE]
set -eu

out="${1:?usage: build-gui-rootfs.sh OUTPUT_TARBALL BASE_TARBALL MIRROR [SUITE]}"
base="${2:?usage: build-gui-rootfs.sh OUTPUT_TARBALL BASE_TARBALL MIRROR [SUITE]}"
mirror="${3:?usage: build-gui-rootfs.sh OUTPUT_TARBALL BASE_TARBALL MIRROR [SUITE]}"
suite="${4:-}"
if [ -z "$suite" ]; then
    suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
fi

packages="chromium xvfb xdotool scrot xterm x11-apps x11-utils fonts-liberation fonts-dejavu-core"

work="$(mktemp -d "${TMPDIR:-/tmp}/synthorg-gui-rootfs.XXXXXX")"
root="$work/root"
cleanup() {
    umount "$root/proc" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

mkdir -p "$root"
tar --numeric-owner -C "$root" -xf "$base"
echo "deb $mirror $suite main" > "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# Services must not start inside the chroot while packages are configured.
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq \
    --no-install-recommends $packages >/dev/null
umount "$root/proc"

# Shrink the image: package lists, caches, docs and translations are not needed.
chroot "$root" apt-get clean
rm -f "$root/usr/sbin/policy-rc.d" "$root/etc/resolv.conf"
rm -rf "$root/var/lib/apt/lists/"* "$root/usr/share/doc/"* "$root/usr/share/man/"* \
    "$root/usr/share/info/"* "$root/var/cache/debconf/"*-old "$root/var/log/"* \
    "$root/usr/lib/chromium/locales/"[!e]*.pak

mkdir -p "$(dirname "$out")"
tar --numeric-owner -C "$root" -cf "$out.partial" .
mv "$out.partial" "$out"
echo "build-gui-rootfs: wrote $out"
