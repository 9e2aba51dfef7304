#!/usr/bin/env bash
# Extracts files from the Debian linux-source of exactly the package version
# of a kernel release's image, downloading the source once into a cache.
#
#   linux-source.sh KVER DEST PATTERN...
#
# KVER is a Debian kernel release (e.g. 6.1.0-56-amd64); PATTERNs are paths
# inside the source tree, shell wildcards allowed ('block/*.h'). The files
# land under DEST with their paths. The source tarball is kept in
# ${IOLAB_CACHE:-~/.cache/iolab}/linux-source/ (about 140 MB); nothing is
# written into the repository but DEST.
#
# Why: an elevator needs the private block/elevator.h, blk-mq.h and
# blk-mq-sched.h, which Debian's linux-headers packages do not ship. They
# must match the running kernel exactly (modversions does not see struct
# layouts), so they come from the same package version, never from a copy.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 KVER DEST PATTERN..." >&2; exit 2; }
kver=$1
dest=$2
shift 2
die() { echo "linux-source.sh: $*" >&2; exit 1; }

cache=${IOLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iolab}/linux-source
mkdir -p "$cache"

# The package version: the installed headers', else the archive's image.
ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null || true)
if [ -z "$ver" ]; then
    ver=$(apt-cache show "linux-image-$kver" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
fi
[ -n "$ver" ] || die "cannot tell the Debian package version of kernel $kver (no linux-headers-$kver installed, none in apt)"
series=$(echo "$kver" | cut -d. -f1-2)
pkg=linux-source-$series
tarball=$cache/$pkg-$ver.tar.xz

if [ ! -s "$tarball" ]; then
    tmp=$(mktemp -d "$cache/dl.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    echo "linux-source.sh: downloading $pkg $ver (once; about 140 MB)" >&2
    (cd "$tmp" && apt-get download -q "$pkg=$ver" >/dev/null 2>&1) ||
        { apt-get update -qq >/dev/null 2>&1 || true
          (cd "$tmp" && apt-get download -q "$pkg=$ver" >/dev/null) ||
              die "apt-get download $pkg=$ver failed"; }
    dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" --wildcards '*/linux-source-*.tar.xz'
    mv "$(find "$tmp" -name 'linux-source-*.tar.xz' | head -1)" "$tarball.part"
    mv "$tarball.part" "$tarball"
fi

top=linux-source-$series
mkdir -p "$dest"
args=()
for p in "$@"; do
    args+=("$top/$p")
done
tar -xJf "$tarball" -C "$dest" --strip-components=1 --wildcards "${args[@]}"
echo "$pkg $ver" >"$dest/.linux-source-version"
