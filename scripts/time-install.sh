#!/usr/bin/env bash
# Times what a user does: `pip install .` from a fresh clone into a fresh venv
# (the Rust core compiled from nothing), for the wheel's cargo profile or another.
#   scripts/time-install.sh            the default (pyproject.toml: profile = "wheel")
#   scripts/time-install.sh release    the `release` profile of `make build`
# Prints wall time, CPU time (user + sys, less sensitive to other load) and the
# load average before and after. Python dependencies come from pip's cache when
# it has them; the figure is dominated by compiling the Rust core.
set -euo pipefail
profile="${1:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/iolab-time-install.XXXXXX)"
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/src"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --upgrade pip
if [ -n "$profile" ]; then
    export MATURIN_PEP517_ARGS="--profile $profile"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -f "pip install . (profile ${profile:-wheel}): %e s wall, %U s user + %S s sys" \
    "$work/venv/bin/pip" install -q "$work/src"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
ls -l "$work/venv/lib/"python3*/site-packages/iolab/_iolab*.so | awk '{print "native module:", $5, "bytes"}'
"$work/venv/bin/iolab" --version
