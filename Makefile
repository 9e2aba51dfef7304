# iolab — one Makefile for the whole workspace.
#   make demo    set up, build, and compare NOOP, Deadline and AS (writes demo-out/)
#   make test    lint, Rust and Python tests, the kernel module in QEMU (what CI runs)
#   make lint    clippy -D warnings, ruff, and the layering of docs/architecture.md
#   make bench   speed figures; DISKSIM=path/to/disksim measures DiskSim 4.0 beside iolab (docs/bench.md)
#   make bench-queue  FastQueue against its peers (docs/fastqueue.md)
#   make test-kernel  the anticipatory/wpcas module in a QEMU guest (docs/kernel.md)
#   make test-differential  the module's C against the Rust elevators, 10,000 random streams (docs/kernel.md)
#   make bench-mail   the mail server: FastQueue vs one file per message vs Postfix (docs/mail.md)
#   make bench-emu    the emulated disk under qemu-io against iolab run (docs/emu.md)

VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
IOLAB  := $(VENV)/bin/iolab
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all deps venv build test test-build test-rust test-python lint demo bench bench-queue bench-mail bench-emu clean \
	test-kernel test-kernel-debug test-differential

all: build

# System packages (Debian): fio for `iolab bench`. Needs root; a no-op when present.
deps:
	@bash scripts/install-deps.sh
	@bash testbed/deps.sh

$(VENV)/.stamp: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2"
	touch $@

venv: $(VENV)/.stamp

# Builds the native core in release mode and installs `iolab` into the venv.
# `maturin develop` installs python/ in place, with no bytecode; where
# PYTHONDONTWRITEBYTECODE is set (as on the shared machine) every `iolab`
# then compiled its modules from source, about 35 ms of each start-up
# (docs/bench.md, branch speed3). A wheel's install compiles them already.
build: venv
	$(VENV)/bin/maturin develop --release --extras dev -q
	$(PY) -m compileall -q python/iolab

# `make test` compiles with the `wheel` profile (Cargo.toml: no LTO, no debug
# info, 16 codegen units), the one `pip install .` uses: compiling every test
# binary with `release`'s thin LTO and debug info took 11 of CI's 30 minutes.
# The native module, the test binaries and test_install.py's wheel then share
# one build of the dependencies. `make build`/`make bench` keep `release`.
TEST_PROFILE ?= wheel

# `deps` first: the Python tests drive fio, Postfix's smtp-source/smtp-sink,
# swaks, QEMU's NBD client and Chromium, so `make test` on a fresh machine
# installs them itself (as root; elsewhere it names the packages and stops).
test: deps test-build lint test-rust test-python test-kernel

# Clippy over every crate and target (the test profile, so its dependencies
# are checked once), ruff over the Python (pyproject.toml: [tool.ruff]), and
# the imports against the tiers of docs/architecture.md (scripts/layers.py).
lint: venv
	cargo clippy --workspace --all-targets --profile $(TEST_PROFILE) -q -- -D warnings
	$(VENV)/bin/python -m pip install -q "ruff>=0.6"
	$(VENV)/bin/ruff check -q python tests scripts
	$(PY) scripts/layers.py

test-build: venv
	$(VENV)/bin/maturin develop --profile $(TEST_PROFILE) --extras dev -q
	$(PY) -m compileall -q python/iolab

test-rust:
	cargo test --workspace --profile $(TEST_PROFILE)
	# FastQueue's threads under the loom model checker (crates/fastqueue/tests/loom.rs, ~45 s)
	cargo test -p fastqueue --profile $(TEST_PROFILE) --features loom --test loom

test-python:
	$(PY) -m pytest -q

# The module's C (kernel:anticipatory, kernel:wpcas) against as and wpcas:
# every preset on both rotating disks over 4 seeds, and 10,000 random
# streams each (make test runs 2 seeds and 1,000 streams); docs/kernel.md.
test-differential:
	IOLAB_DIFF_CASES=10000 IOLAB_DIFF_SEEDS=4 cargo test -p iolab-sim --profile $(TEST_PROFILE) --test kernel_differential

# The elevator module: build, checkpatch, boot Debian's 6.1 under QEMU,
# stress (docs/kernel.md). Needs root; a few minutes.
test-kernel:
	bash testbed/test-kernel.sh

# The same on a kernel with lockdep and KASAN built from the image's source
# (the first build takes tens of minutes on 2 cores; not part of make test).
test-kernel-debug:
	bash testbed/test-kernel-debug.sh

demo: build
	$(IOLAB) compare --disk hp97560 --workload iozone --schedulers noop,deadline,as \
		--set workload.processes=10 --seeds 3 -o demo-out
	@echo "report: demo-out/report.md (and report.html)"

bench: build
	cargo run --release -q -p iolab-sim --bin iolab-sim-bench
	$(PY) scripts/bench_commands.py
	$(PY) scripts/disksim_closed.py

# FastQueue against its peers; a few minutes (see docs/fastqueue.md).
bench-queue: build
	$(IOLAB) queue bench --recovery-mib 1024

# The mail server under smtp-source load, three systems; needs root and `make deps` (docs/mail.md).
bench-mail: build
	$(IOLAB) mail bench

# The emulated disk: random reads through qemu-io against iolab run (docs/emu.md).
bench-emu: build
	$(PY) -m iolab.emu_bench

clean:
	cargo clean
	rm -rf $(VENV) demo-out
