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
	@./$(DEPS)

configure: deps
	@if [ ! -f $(BUILD)/CMakeCache.txt ]; then \
	  $(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DAGENTEXEC_TESTS=ON -DAGENTEXEC_BENCH=ON >/dev/null; \
	fi

test: configure
	$(CMAKE) --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300

bench: configure
	$(CMAKE) --build $(BUILD) -j$(JOBS) --target agentexec agentexec_bench
	./bench/run.sh $(BUILD)

# The build's chatter goes to stderr so stdout is the run itself: JSONL, then the answer.
demo:
	@$(MAKE) all >&2
	@./examples/demo.sh $(BUILD)/agentexec

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD)
