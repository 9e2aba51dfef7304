#!/usr/bin/env bash
# Installs the Debian packages iolab needs at run time and in its tests.
# Safe to run again: it installs only what is missing.
set -euo pipefail
need=()
command -v fio >/dev/null 2>&1 || need+=(fio)
# iolab bench: losetup (mount), blkid (util-linux), mkfs.ext4 (e2fsprogs); usually present.
have_sbin() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }
have_sbin losetup || need+=(mount)
have_sbin blkid || need+=(util-linux)
have_sbin mkfs.ext4 || need+=(e2fsprogs)
# iolab mail bench and its crash test: Postfix's smtp-source/smtp-sink (and Postfix
# itself as the third system), swaks to send by hand, strace for --strace.
have_sbin smtp-source || need+=(postfix)
command -v swaks >/dev/null 2>&1 || need+=(swaks)
command -v strace >/dev/null 2>&1 || need+=(strace)
# iolab emu's tests and benchmark: QEMU's NBD client (qemu-io, qemu-img), libnbd's nbdinfo, a QEMU guest.
command -v qemu-io >/dev/null 2>&1 || need+=(qemu-utils)
command -v nbdinfo >/dev/null 2>&1 || need+=(libnbd-bin)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "iolab needs these Debian packages: ${need[*]}; run: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
apt-get update -qq
# Install Postfix without configuring or starting a mail system.
echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
