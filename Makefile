# mwgate: one command to set up and test (`make test`), one to see it run (`make demo`).
SWIFT ?= swift
SWIFT_FLAGS ?=
BENCH_DIR ?= bench-results

.PHONY: all deps build release test bench demo deb clean

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

# Benchmarks run on a release build, beside their peers, and write $(BENCH_DIR)/.
bench: release
	scripts/bench.sh $(BENCH_DIR)

demo: build
	scripts/demo.sh

# dist/mwgate_<version>_<arch>.deb: static-stdlib release binaries, units, sysusers, tmpfiles,
# D-Bus policy, udev rule, default configuration.
deb: deps
	scripts/package-deb.sh dist

clean:
	$(SWIFT) package clean
