# sonde: `make` builds build/sonde, `make demo` profiles the bundled example,
# `make check` runs every test (unit tests under ASan and UBSan).
MAKEFLAGS += --no-print-directory
BUILD ?= build
CHECK_BUILD ?= build-check
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup demo check clean

all: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

setup:
	@./scripts/setup

demo: all
	@echo "== sonde run -- $(BUILD)/workloads/demo"
	@$(BUILD)/sonde run -o $(BUILD)/demo-run --force -- $(BUILD)/workloads/demo
	@echo
	@echo "== $(BUILD)/demo-run/report.md"
	@cat $(BUILD)/demo-run/report.md

check: setup
	@cmake -S . -B $(CHECK_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSONDE_SANITIZE=ON >/dev/null
	@cmake --build $(CHECK_BUILD) -j $(JOBS)
	@cd $(CHECK_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) $(CHECK_BUILD)
