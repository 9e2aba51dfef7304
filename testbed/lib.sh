# Shared settings and helpers of the testbed scripts (sourced, not run).
#
# The kernel the guest boots is Debian's current 6.1 image: its name is read
# from the linux-image-amd64 meta package (Debian bumps it now and then), and
# the module is built against that image's headers, with the private block/
# headers taken from linux-source of exactly the image's package version.
#
# Downloads and what is extracted from them live in $TESTBED_CACHE, outside
# the repository (override with IOLAB_TESTBED_CACHE).

TESTBED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$TESTBED_DIR/.." && pwd)
TESTBED_CACHE=${IOLAB_TESTBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/iolab/testbed}

tb_log() { printf '[testbed] %s\n' "$*" >&2; }
tb_die() { printf '[testbed] error: %s\n' "$*" >&2; exit 1; }

# The image's kernel release (e.g. 6.1.0-56-amd64): KVER if set, else what
# linux-image-amd64 depends on.
tb_kver() {
    if [ -n "${KVER:-}" ]; then
        echo "$KVER"
        return
    fi
    local k
    k=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ { sub("linux-image-", "", $2); print $2; exit }')
    [ -n "$k" ] || tb_die "apt-cache depends linux-image-amd64 names no image (run apt-get update?)"
    echo "$k"
}

# The Debian package version of linux-image-$1 (e.g. 6.1.192-2).
tb_pkgver() {
    local v
    v=$(apt-cache show "linux-image-$1" 2>/dev/null | awk '/^Version:/ { print $2; exit }')
    [ -n "$v" ] || tb_die "apt knows no package linux-image-$1"
    echo "$v"
}

# The source package for a release: linux-source-6.1 for 6.1.0-56-amd64.
tb_srcpkg() {
    echo "linux-source-$(echo "$1" | cut -d. -f1-2)"
}

# Where everything for one kernel release is kept.
tb_kdir() {
    echo "$TESTBED_CACHE/$1"
}
