#!/usr/bin/env bash
# Builds the guest's initramfs: busybox-static, testbed/guest/init, and the
# image's own modules that the guest needs (plain .ko files and two lists:
# modules.base, loaded by init; the rest loaded by jobs with `load NAME`).
# Prints its path. Rebuilt only when its inputs change.
#
#   build-initramfs.sh [--bare]    --bare: no modules (a kernel with all built in)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KV=$(tb_kver)
KC=$(tb_kdir "$KV")
bare=
[ "${1:-}" = --bare ] && bare=1
[ -n "$bare" ] || [ -e "$KC/image/.done" ] || tb_die "run testbed/deps.sh first"

# Loaded by init, in this order (with their dependencies).
BASE="virtio_pci 9pnet_virtio 9p"
# Loaded by jobs when they want them.
EXTRA="virtio_blk bfq kyber-iosched null_blk nbd scsi_debug sd_mod"

key=$( (cat "$TESTBED_DIR/guest/init" "$0"; echo "$BASE $EXTRA $bare"; md5sum /bin/busybox) |
       md5sum | cut -c1-12)
mkdir -p "$KC"
out=$KC/initramfs-$key.cpio.gz
if [ -s "$out" ]; then
    echo "$out"
    exit 0
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,dev,proc,sys,lib/modules,etc}
cp /bin/busybox "$root/bin/busybox"
cp "$TESTBED_DIR/guest/init" "$root/init"
chmod +x "$root/init"

# modprobe --show-depends prints the insmod order, dependencies first.
order() {
    for m in "$@"; do
        modprobe -d "$KC/image" -S "$KV" --show-depends "$m" |
            awk '$1 == "insmod" { print $2 }'
    done | awk '!seen[$0]++'
}
copy_list() { # list file, modules...
    local list=$1
    shift
    order "$@" | while read -r ko; do
        name=$(basename "$ko" .ko)
        cp "$ko" "$root/lib/modules/$name.ko"
        echo "$name"
    done >"$list"
}
if [ -n "$bare" ]; then
    : >"$root/modules.base"
    : >"$root/modules.all"
else
    copy_list "$root/modules.base" $BASE
    copy_list "$root/modules.all" $BASE $EXTRA
fi

(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$out.tmp.$$"
# (a temporary of this shell's own: guests booted side by side may build it at once)
mv "$out.tmp.$$" "$out"
echo "$out"
