#!/usr/bin/env bash
# Builds a small Linux kernel for the guest from the same Debian
# linux-source as the image (6.1.y), with the lock and memory checkers
# Debian's kernel lacks: lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP,
# DEBUG_LIST, object debugging for timers, and KASAN (generic). Everything
# the guest needs is built in; only our module is loaded.
#
#   testbed/debug-kernel.sh        prints the build directory (KDIR; the
#                                  kernel is KDIR/arch/x86/boot/bzImage)
#
# The build lives in $TESTBED_CACHE/debug-<version>/ and is reused; the
# first build takes long (tens of minutes on 2 busy cores).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KV=$(tb_kver)
PKGVER=$(tb_pkgver "$KV")
dir=$TESTBED_CACHE/debug-$PKGVER
src=$dir/linux
if [ -s "$dir/vmlinux.done" ] && [ -s "$src/arch/x86/boot/bzImage" ] && [ -e "$src/Module.symvers" ]; then
    echo "$src"
    exit 0
fi
mkdir -p "$dir"
# What a kernel build needs beyond the module build's tools.
need=()
for pkg in flex bison bc libelf-dev libssl-dev make gcc-12; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
        need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || tb_die "the debug kernel build needs: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if [ ! -e "$src/.extracted" ]; then
    tb_log "extracting linux-source $PKGVER (the whole tree)"
    rm -rf "$src"
    "$REPO_DIR/kernel/scripts/linux-source.sh" "$KV" "$src" '*'
    touch "$src/.extracted"
fi

cd "$src"
if [ ! -e .config.iolab ] || [ "$0" -nt .config.iolab ]; then
    make -s tinyconfig >/dev/null
    y() { for o in "$@"; do scripts/config --enable "$o"; done; }
    # A 64-bit SMP guest with a serial console, booted by QEMU as PVH.
    y 64BIT SMP PRINTK TTY SERIAL_8250 SERIAL_8250_CONSOLE BINFMT_ELF BINFMT_SCRIPT \
      BLK_DEV_INITRD RD_GZIP DEVTMPFS PROC_FS SYSFS TMPFS SHMEM FUTEX EPOLL SIGNALFD \
      TIMERFD EVENTFD AIO FILE_LOCKING POSIX_TIMERS MULTIUSER SYSVIPC HIGH_RES_TIMERS \
      HYPERVISOR_GUEST PVH PARAVIRT KVM_GUEST PCI PCI_MSI
    scripts/config --set-val NR_CPUS 4 --enable HZ_250 --disable HZ_100 --enable PREEMPT_VOLUNTARY
    # The block layer as the image has it, with every elevator built in.
    y BLOCK BLK_DEBUG_FS DEBUG_FS MQ_IOSCHED_DEADLINE MQ_IOSCHED_KYBER IOSCHED_BFQ \
      VIRTIO_MENU VIRTIO VIRTIO_PCI VIRTIO_BLK NET INET NET_9P NET_9P_VIRTIO \
      NETWORK_FILESYSTEMS 9P_FS MODULES MODULE_UNLOAD
    # Readable reports: symbols, BUG(), an unwinder; SLUB (KASAN needs it).
    scripts/config --disable SLOB --enable SLUB
    y KALLSYMS KALLSYMS_ALL BUG DEBUG_BUGVERBOSE PRINTK_TIME UNWINDER_ORC
    # The checkers.
    y DEBUG_KERNEL PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_LIST DEBUG_OBJECTS \
      DEBUG_OBJECTS_TIMERS DEBUG_OBJECTS_WORK DEBUG_OBJECTS_RCU_HEAD DETECT_HUNG_TASK \
      SOFTLOCKUP_DETECTOR KASAN KASAN_GENERIC KASAN_OUTLINE STACKTRACE
    make -s olddefconfig
    for o in PROVE_LOCKING DEBUG_ATOMIC_SLEEP KASAN KALLSYMS VIRTIO_BLK NET_9P_VIRTIO 9P_FS IOSCHED_BFQ PVH; do
        grep -q "^CONFIG_$o=y" .config || tb_die "CONFIG_$o did not stick (see $src/.config)"
    done
    cp .config .config.iolab
fi
tb_log "building the debug kernel in $src (make -j$(nproc))"
# bzImage: this small kernel does not come up when QEMU boots its vmlinux
# by PVH, as it does Debian's
nice make -s -j"$(nproc)" bzImage modules >"$dir/build.log" 2>&1 ||
    { tail -30 "$dir/build.log" >&2; tb_die "debug kernel build failed"; }
date >"$dir/vmlinux.done"
echo "$src"
