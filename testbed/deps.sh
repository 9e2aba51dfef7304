#!/usr/bin/env bash
# Installs and downloads what the kernel testbed needs; safe to run again
# (a no-op once everything is in place).
#
#   Debian packages: qemu-system-x86, busybox-static, fio, kmod, nbdkit,
#     cpio, xz-utils, and linux-headers-<KVER> (pulls -common and kbuild).
#   Into $TESTBED_CACHE/<KVER>/ (lib.sh):
#     image/     linux-image-<KVER>.deb unpacked (kernel and modules; not installed)
#     vmlinux    the uncompressed kernel (QEMU boots it by PVH, 3x faster)
#     src/       from linux-source-<6.x> of the image's exact package version
#                (kernel/scripts/linux-source.sh, which caches the tarball):
#                block/*.h, scripts/checkpatch.pl and its data, extract-vmlinux
#     fio/       a chroot-able fio: the binary and the libraries it links
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KV=$(tb_kver)
PKGVER=$(tb_pkgver "$KV")
SRCPKG=$(tb_srcpkg "$KV")
KC=$(tb_kdir "$KV")
mkdir -p "$KC"

need=()
for pkg in qemu-system-x86 busybox-static fio kmod nbdkit cpio xz-utils perl gcc-12 \
        "linux-headers-$KV"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
        need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || tb_die "the testbed needs Debian packages: ${need[*]}; run as root"
    tb_log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

dl=$TESTBED_CACHE/debs
mkdir -p "$dl"
fetch_deb() { # package version -> path of the .deb in $dl
    local f
    f=$(ls "$dl/${1}_${2//:/%3a}_"*.deb 2>/dev/null | head -1 || true)
    if [ -z "$f" ]; then
        tb_log "downloading $1 $2"
        (cd "$dl" && apt-get download -q "$1=$2" >/dev/null 2>&1) ||
            { apt-get update -qq && (cd "$dl" && apt-get download -q "$1=$2" >/dev/null); }
        f=$(ls "$dl/${1}_${2//:/%3a}_"*.deb | head -1)
    fi
    echo "$f"
}

if [ ! -e "$KC/image/.done" ]; then
    deb=$(fetch_deb "linux-image-$KV" "$PKGVER")
    rm -rf "$KC/image"
    dpkg -x "$deb" "$KC/image"
    # modules.dep, so that the guest's module list can be resolved here.
    depmod -b "$KC/image" "$KV"
    rm -f "$deb"
    touch "$KC/image/.done"
fi

if [ ! -e "$KC/src/.done" ]; then
    tb_log "extracting block/*.h and scripts from $SRCPKG $PKGVER"
    rm -rf "$KC/src"
    "$REPO_DIR/kernel/scripts/linux-source.sh" "$KV" "$KC/src" 'block/*.h' \
        scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch \
        scripts/extract-vmlinux
    touch "$KC/src/.done"
fi

if [ ! -s "$KC/vmlinux" ]; then
    tb_log "extracting vmlinux"
    sh "$KC/src/scripts/extract-vmlinux" "$KC/image/boot/vmlinuz-$KV" >"$KC/vmlinux.tmp"
    mv "$KC/vmlinux.tmp" "$KC/vmlinux"
fi

if [ ! -x "$KC/fio/usr/bin/fio" ]; then
    tb_log "making a chroot-able fio"
    rm -rf "$KC/fio"
    mkdir -p "$KC/fio/usr/bin"
    cp "$(command -v fio)" "$KC/fio/usr/bin/fio"
    ldd "$(command -v fio)" | awk '/=>/ { print $3 } /^\t\/lib/ { print $1 }' |
        while read -r lib; do
            [ -n "$lib" ] && [ -e "$lib" ] || continue
            mkdir -p "$KC/fio$(dirname "$lib")"
            cp -L "$lib" "$KC/fio$lib"
        done
    # The dynamic loader, wherever ldd lists it.
    ld=$(ldd "$(command -v fio)" | awk '/ld-linux/ { print ($3 != "" ? $3 : $1) }' | head -1)
    mkdir -p "$KC/fio$(dirname "$ld")" "$KC/fio/lib64"
    cp -L "$ld" "$KC/fio$ld"
    cp -L "$ld" "$KC/fio/lib64/" 2>/dev/null || true
fi
tb_log "ready: $KV ($PKGVER) in $KC"
