# mwgate: one command to set up and test (`make test`), one to see it run (`make demo`).
SWIFT ?= swift
SWIFT_FLAGS ?=
BENCH_DIR ?= bench-results

.PHONY: all deps build release test test-bluez fuzz bench demo deb clean cli-docs mwctl-static soak orderfile

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)

# Builds everything, runs every test, and prints the runner's summary line last.
test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	scripts/run-tests.sh $(SWIFT_FLAGS)

# The real-BlueZ scenarios (`make test` runs them as its last pass; MWGATE_BLUEZ_VM=0 leaves them out,
# MWGATE_BLUEZ_VM=only runs only them): mwgated and mwctl from a release build (scripts/vm/build-release.sh)
# inside a qemu VM with Debian's kernel and bluetoothd 5.66, boards as `mwsim --peripheral`
# (docs/bluez-vm.md). BLUEZ_GROUPS="session stop": some groups; BLUEZ_GROUPS=all: also those not yet reliable (stop, backfill).
BLUEZ_GROUPS ?=
test-bluez: deps
	bin=$$(scripts/vm/build-release.sh $(SWIFT_FLAGS)) && MWGATE_BIN=$$bin scripts/vm/test-bluez.py $(BLUEZ_GROUPS)

# Every area's benchmark in one go on a release build (and mwgated/mwctl as packaged, static
# Swift runtime), beside their peers; writes docs/benchmarks.md (+ SVG plots in
# docs/benchmarks/) and the raw output in $(BENCH_DIR)/. `make bench BENCH_QUICK=1`: every area
# briefly, to check the pipeline; BENCH_AREAS="a b": some areas (both report to $(BENCH_DIR)/benchmarks.md).
BENCH_QUICK ?=
BENCH_AREAS ?=
bench: deps
	BENCH_QUICK=$(BENCH_QUICK) BENCH_AREAS="$(BENCH_AREAS)" scripts/bench.sh $(BENCH_DIR)

# mwctl's shell completions and the man pages, generated from the parsers
# (build/cli/{mwctl.bash,_mwctl,mwctl.fish,mwctl.1,mwgated.8}).
CLI_DIR ?= build/cli
cli-docs:
	$(SWIFT) build -c release --product mwctl $(SWIFT_FLAGS)
	$(SWIFT) build -c release --product mwgated $(SWIFT_FLAGS)
	mkdir -p $(CLI_DIR)
	mwctl=$$($(SWIFT) build -c release --show-bin-path)/mwctl; \
	$$mwctl --generate-completion-script bash > $(CLI_DIR)/mwctl.bash && \
	$$mwctl --generate-completion-script zsh > $(CLI_DIR)/_mwctl && \
	$$mwctl --generate-completion-script fish > $(CLI_DIR)/mwctl.fish && \
	/usr/bin/python3 scripts/gen-man.py $$mwctl > $(CLI_DIR)/mwctl.1 && \
	/usr/bin/python3 scripts/gen-man.py $$(dirname $$mwctl)/mwgated > $(CLI_DIR)/mwgated.8

# mwctl as packaged: the Swift runtime linked statically (twice as fast to start, runs
# without the Swift runtime installed). Own scratch path, so the release tree stays cached.
mwctl-static: deps
	SWIFT_FLAGS="$(SWIFT_FLAGS)" scripts/build-static.sh mwctl
	@echo "mwctl: .build-static/release/mwctl"

demo: build
	scripts/demo.sh

# packaging/mwgated.order and mwgated-unnamed.ld: the daemon's link order (its executed code
# packed together, for resident memory), from a run of the packaged mwgated under callgrind
# (scripts/orderfile/).
orderfile: deps
	SWIFT_FLAGS="$(SWIFT_FLAGS)" scripts/orderfile/profile.sh

# A bounded soak with injected faults, checked sample by sample (docs/soak.md): half the time
# against the Firestore emulator, half against PostgreSQL. SOAK_SEED replays a run's faults.
SOAK_SECONDS ?= 600
SOAK_SINK ?= both
SOAK_SEED ?=
SOAK_OUT ?= soak-results/soak.md
# on: mwgated backfills from the boards' flash logs and nothing may be lost (docs/soak.md).
SOAK_BACKFILL ?= off
soak: build
	/usr/bin/python3 scripts/soak/soak.py --seconds $(SOAK_SECONDS) --sink $(SOAK_SINK) --out $(SOAK_OUT) \
		$(if $(filter on,$(SOAK_BACKFILL)),--backfill,--no-backfill) $(if $(SOAK_SEED),--seed $(SOAK_SEED))

# dist/mwgate_<version>_<arch>.deb: static-stdlib release binaries, units, sysusers, tmpfiles,
# D-Bus policy, udev rule, default configuration.
deb: deps
	scripts/package-deb.sh dist

clean:
	$(SWIFT) package clean

# The fuzz suite (Tests/FuzzTests, docs/fuzzing.md) with MWGATE_FUZZ_SCALE times the inputs
# `make test` tries. Replay one failing case with MWGATE_FUZZ_REPLAY=<seed it printed>.
MWGATE_FUZZ_SCALE ?= 25
fuzz: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	MWGATE_FUZZ_SCALE=$(MWGATE_FUZZ_SCALE) $(SWIFT) test --skip-build --filter FuzzTests $(SWIFT_FLAGS)
