#!/usr/bin/env bash
# Installs the Debian packages iolab needs at run time and in its tests.
# Safe to run again: it installs only what is missing.
set -euo pipefail
need=()
command -v fio >/dev/null 2>&1 || need+=(fio)
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "iolab needs these Debian packages: ${need[*]}; run: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
