# Thin driver over CMake. `make` builds build/agentexec; see README for the rest.
BUILD   ?= build
JOBS    ?= $(shell nproc)
CMAKE   ?= cmake
DEPS    := scripts/install-deps.sh
MAKEFLAGS += --no-print-directory

.PHONY: all deps configure test bench demo format clean

all: configure
	$(CMAKE) --build $(BUILD) -j$(JOBS) --target agentexec

deps:
	@./$(DEPS) build

# A plain `make` needs only the build dependencies: tests and benchmarks are switched on
# (and their packages installed) by `make test` / `make bench`.
configure: deps
	@if [ ! -f $(BUILD)/CMakeCache.txt ]; then \
	  $(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DAGENTEXEC_TESTS=OFF -DAGENTEXEC_BENCH=OFF >/dev/null; \
	fi

# make test: the whole suite built with clang under AddressSanitizer + UndefinedBehaviorSanitizer
# (`make test-asan`), each fuzz harness over its seeds and for ASAN_CI_FUZZ_SECONDS, the
# format and clang-tidy checks (tests/lint); then the fast unit areas (CI_RELEASE_AREAS) on
# the GCC -O3 release build, the binary that ships. TEST_ASAN=0 runs the whole suite on the
# release build instead, without sanitizers. README "Tests" says why the rest of the suite
# runs in one build: .ci/run must stay under 15 minutes on 2 cores.
TEST_ASAN     ?= 1
ASAN_CI_FUZZ_SECONDS ?= 5
# ModelHttpTest is left out there: its retries and timeouts wait (about 2 minutes of the
# areas' 2.5), and the sanitized run has them; so are net's two end-to-end scripts, which run
# the same binary's proxy in namespaces the sanitized run makes too. net's units are in: the
# proxy ships, and only gcc showed that two of them depended on an evaluation order.
CI_RELEASE_AREAS ?= base runner model outputs engine net
CI_RELEASE_EXCLUDE ?= ^ModelHttpTest[.]|^net_(allow_list|credentials)
test:
	@if [ "$(TEST_ASAN)" = 1 ]; then \
	  $(MAKE) test-asan ASAN_AREAS=all FUZZ_SMOKE_SECONDS=$(ASAN_CI_FUZZ_SECONDS) && \
	  $(MAKE) test-release RELEASE_AREAS="$(CI_RELEASE_AREAS)" RELEASE_EXCLUDE="$(CI_RELEASE_EXCLUDE)"; \
	else $(MAKE) test-release; fi

# RELEASE_AREAS: the test areas test-release builds and runs ("all" = every one);
# RELEASE_EXCLUDE: a ctest -E regex of tests left out of them.
RELEASE_AREAS ?= all
RELEASE_EXCLUDE ?=
.PHONY: test-release
test-release: configure
	@./$(DEPS) test
	@$(CMAKE) -DAGENTEXEC_TESTS=ON $(call AREAS_ARG,$(RELEASE_AREAS)) $(BUILD) >/dev/null
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300 -LE '$(CTEST_LEAVE_OUT)' $(if $(RELEASE_EXCLUDE),-E '$(RELEASE_EXCLUDE)')

# The tests of the release artefacts (the static binaries of both architectures, the portable
# .deb): built first, then checked. `make test` leaves these out (CTEST_LEAVE_OUT), since it
# does not build what they check.
CTEST_LEAVE_OUT ?= release-artefacts
.PHONY: test-dist
test-dist:
	$(MAKE) dist deb
	$(MAKE) dist ARCH=aarch64
	@./$(DEPS) test
	@$(CMAKE) -DAGENTEXEC_TESTS=ON -UAGENTEXEC_TEST_AREAS $(BUILD) >/dev/null
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -L release-artefacts

# make bench: the micro-benchmarks, then one table of whole-process ratios against codex exec
# (bench/compare.py; $(BUILD)/bench-results/compare.json). BENCH_RUNS=N runs per figure (5),
# BENCH_ROWS=3,4 only those rows of the table (all six);
# CODEX_BIN=PATH measures that codex instead of the copy npm installs under $(BUILD)/peer.
# Nothing is asserted: a benchmark never fails the build.
bench: configure
	@./$(DEPS) bench
	@grep -q '^AGENTEXEC_BENCH:BOOL=ON' $(BUILD)/CMakeCache.txt || $(CMAKE) -DAGENTEXEC_BENCH=ON $(BUILD) >/dev/null
	$(CMAKE) --build $(BUILD) -j$(JOBS) --target agentexec agentexec_bench
	./bench/run.sh $(BUILD)

# Real engines, outside `make test` (they need npm, a daemon or a scheduler): each case passes,
# fails, or skips saying why; the last line is the tally.
.PHONY: test-engines
test-engines: all
	./tests/engines/run.sh $(BUILD)

# codex's own `codex exec` tests, ported (tests/peer): against this build's agentexec, and
# against the real codex too when CODEX_BIN names one.
.PHONY: test-peer
test-peer: all
	python3 tests/peer/peer_test.py $(BUILD)/agentexec
	$(if $(CODEX_BIN),python3 tests/peer/peer_test.py $(CODEX_BIN))

# The README's set-up on a bare Debian 12 (debootstrap, Docker): its two blocks, as root and as
# a user with sudo, from a clone of HEAD (tests/engines/fresh_machine.sh; about 25 min a run).
.PHONY: test-fresh
test-fresh:
	./tests/engines/fresh_machine.sh $(BUILD)/fresh

# The build's chatter goes to stderr so stdout is the run itself: JSONL, then the answer.
demo:
	@./$(DEPS) demo
	@$(MAKE) all >&2
	@./examples/demo.sh $(BUILD)/agentexec

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

# make lint: the checks tests/lint runs in make test: the format check, and clang-tidy over the
# product files changed since .clang-tidy-baseline (new findings fail). make lint-baseline:
# clang-tidy over every product file (about 15 CPU-minutes), rewriting the baseline.
.PHONY: lint lint-baseline
lint: configure-asan
	python3 scripts/lint.py format
	python3 scripts/lint.py tidy $(ASAN_BUILD)
lint-baseline: configure-asan
	python3 scripts/lint.py baseline $(ASAN_BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(CLANG_BUILD) $(DIST_BUILD)

# --- clang, sanitizers and fuzzing ---
# build-clang: everything (product, tests, bench) with clang, warnings as errors.
# test-asan:   the test suite built with clang, AddressSanitizer + UndefinedBehaviorSanitizer
#              (-O1, no benchmarks), plus each fuzz harness over its seeds and for
#              FUZZ_SMOKE_SECONDS; any sanitizer report fails the test that triggered it.
# fuzz:        each libFuzzer harness for FUZZ_SECONDS, new inputs kept in the build tree.
CLANG_BUILD        ?= build-clang
ASAN_BUILD         ?= build-asan
FUZZ_SECONDS       ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZERS            := sse responses chat apply_patch config prompt jsonl
CLANG_ENV          := CXX=clang++ CC=clang

.PHONY: build-clang configure-asan test-asan fuzz

build-clang: deps
	@if [ ! -f $(CLANG_BUILD)/CMakeCache.txt ]; then \
	  $(CLANG_ENV) $(CMAKE) -S . -B $(CLANG_BUILD) -DCMAKE_BUILD_TYPE=Release \
	    -DAGENTEXEC_TESTS=ON -DAGENTEXEC_BENCH=ON >/dev/null; \
	fi
	$(CMAKE) --build $(CLANG_BUILD) -j$(JOBS)

# ASAN_AREAS: the test areas (folders of tests/) to build and run, "all" = every one;
# ASAN_SKIP_AREAS: areas left out of them.
ASAN_AREAS ?= all
ASAN_SKIP_AREAS ?=
empty :=
space := $(empty) $(empty)
semicolons = $(subst $(space),;,$(strip $(1)))
AREAS_ARG = $(if $(filter all,$(1)),-UAGENTEXEC_TEST_AREAS,-DAGENTEXEC_TEST_AREAS="$(call semicolons,$(1))") \
  -DAGENTEXEC_TEST_AREAS_SKIP="$(call semicolons,$(2))"
# Sanitizer reports abort the process (-fno-sanitize-recover), so the test that triggered one
# fails; the binaries carry their own sanitizer defaults (tests/sanitizers/defaults.cc).

configure-asan: deps
	@./$(DEPS) test
	@if [ ! -f $(ASAN_BUILD)/CMakeCache.txt ]; then \
	  $(CLANG_ENV) $(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug \
	    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DAGENTEXEC_TESTS=ON -DAGENTEXEC_BENCH=OFF \
	    -DAGENTEXEC_SANITIZE=address,undefined -DAGENTEXEC_FUZZ=ON >/dev/null; \
	fi
	@$(CMAKE) $(call AREAS_ARG,$(ASAN_AREAS),$(ASAN_SKIP_AREAS)) -DAGENTEXEC_FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) $(ASAN_BUILD) >/dev/null

# Sanitized tests spend much of their time waiting on the processes they start, so ctest
# runs twice as many at once as there are cores.
ASAN_CTEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
test-asan: configure-asan
	$(CMAKE) --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(ASAN_CTEST_JOBS) --timeout 600 -LE '$(CTEST_LEAVE_OUT)'

fuzz: configure-asan
	$(CMAKE) --build $(ASAN_BUILD) -j$(JOBS) --target $(FUZZERS:%=%_fuzz)
	@for f in $(FUZZERS); do \
	  echo "fuzz: $$f for $(FUZZ_SECONDS) s" >&2; \
	  mkdir -p $(ASAN_BUILD)/tests/fuzz/corpus/$$f; \
	  $(ASAN_BUILD)/tests/fuzz/$${f}_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=4096 -artifact_prefix=$(ASAN_BUILD)/tests/fuzz/$$f- \
	    $(ASAN_BUILD)/tests/fuzz/corpus/$$f tests/fuzz/$$f/seeds || exit 1; \
	done

# --- distribution (docs/CI.md): portable tarball, install, .deb ---
# ARCH=aarch64 on an x86_64 host cross-compiles (cmake/toolchain-aarch64.cmake, Debian's
# g++-aarch64-linux-gnu and arm64 multiarch archives) into build-dist-aarch64.
PREFIX     ?= /usr/local
VERSION    := $(shell grep -om1 'agentexec VERSION [0-9.]*' CMakeLists.txt | cut -d' ' -f3)
HOST_ARCH  := $(shell uname -m)
ifneq ($(origin ARCH),command line)  # an ARCH in the environment means something else
ARCH       := $(HOST_ARCH)
endif
ifeq ($(ARCH),$(HOST_ARCH))
DIST_BUILD ?= build-dist
DIST_DEPS  := dist
DIST_STRIP := strip
else ifneq ($(wildcard cmake/toolchain-$(ARCH).cmake),)
DIST_BUILD ?= build-dist-$(ARCH)
DIST_DEPS  := dist-$(ARCH)
DIST_STRIP := $(ARCH)-linux-gnu-strip
DIST_CMAKE_ARGS += -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/toolchain-$(ARCH).cmake
else
DIST_BUILD ?= build-dist-$(ARCH)
DIST_ERROR := ARCH=$(ARCH): no cmake/toolchain-$(ARCH).cmake to cross-compile from $(HOST_ARCH)
endif
DIST_NAME  := agentexec-$(VERSION)-linux-$(ARCH)

.PHONY: dist dist-configure install deb version

# The version the tarballs are named with (release.yml checks the tag against it).
version:
	@echo $(VERSION)

# Always reconfigures, so the commit --version prints is the current one.
dist-configure:
	$(if $(DIST_ERROR),$(error $(DIST_ERROR)))
	@./$(DEPS) $(DIST_DEPS)
	@$(CMAKE) -S . -B $(DIST_BUILD) -DCMAKE_BUILD_TYPE=Release -DAGENTEXEC_PORTABLE=ON $(DIST_CMAKE_ARGS) \
	  -DAGENTEXEC_TESTS=OFF -DAGENTEXEC_BENCH=OFF >/dev/null

# dist/agentexec-<version>-linux-<arch>.tar.gz: the static binary (stripped), its manual page
# agentexec.1, README.md, LICENSE and THIRD_PARTY_NOTICES (the libraries the binary bundles,
# their licences, how to relink).
dist: dist-configure
	$(CMAKE) --build $(DIST_BUILD) -j$(JOBS) --target agentexec
	@rm -rf dist/$(DIST_NAME) && mkdir -p dist/$(DIST_NAME)
	$(DIST_STRIP) -o dist/$(DIST_NAME)/agentexec $(DIST_BUILD)/agentexec
	cp README.md LICENSE THIRD_PARTY_NOTICES docs/agentexec.1 dist/$(DIST_NAME)/
	tar -C dist -czf dist/$(DIST_NAME).tar.gz --owner=0 --group=0 $(DIST_NAME)
	@rm -rf dist/$(DIST_NAME)
	@cd dist && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256
	@echo dist/$(DIST_NAME).tar.gz

# make install PREFIX=/opt/agentexec [DESTDIR=...]: the binary built here, its manual page
# (share/man/man1/agentexec.1.gz) and its docs.
install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

# dist/agentexec_<version>_<arch>.deb from the portable build: depends on no library package.
deb: dist-configure
	$(CMAKE) --build $(DIST_BUILD) -j$(JOBS) --target agentexec
	cd $(DIST_BUILD) && cpack -G DEB >/dev/null
	@mkdir -p dist && cp $(DIST_BUILD)/package/*.deb dist/ && ls dist/*.deb
# --- end distribution ---
