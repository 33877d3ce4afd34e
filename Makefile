# The two commands of the README: `make` runs the main job on the default
# tree, `make check` runs every test.  Both install what they need.

KVER ?= 6.1
ARCH ?= x86_64
PYTHON := /usr/bin/python3
NS := $(PYTHON) tools/notifier-series

.PHONY: all deps prepare boot-test arch-boot-test mutation-test \
	torture-baseline classify convert series bisect bench unit-test check \
	check-more runtime-test

all: series

deps:
	@$(NS) deps

prepare: deps
	$(NS) prepare $(KVER)

boot-test: deps
	$(NS) boot-test $(KVER) --arch $(ARCH)

# The fixes proven on the architectures they touch: powerpc and s390
# kernels built and booted with and without them.  Not part of check (the
# README quotes its last run).
arch-boot-test: deps
	$(NS) boot-test $(KVER) --arch powerpc
	$(NS) boot-test $(KVER) --arch s390

classify: deps
	$(NS) classify $(KVER)

series: deps
	$(NS) series $(KVER)

bisect: deps
	$(NS) bisect $(KVER)

# The integration kernels of the core-patched and the series' trees booted
# with a workload (out/$(KVER)/runtime/).  Needs make classify and make
# series first.  Not part of check, which tests its analysis on a recorded
# boot (the README quotes the last full run).
runtime-test: deps
	$(NS) runtime-test $(KVER)

# Figures, not a verdict: out/$(KVER)/bench.json.  Not part of check.
bench: deps
	$(NS) bench $(KVER)

convert: deps
	$(NS) convert-tree $(KVER) --boot-test

mutation-test: deps
	$(NS) mutation-test $(KVER)

torture-baseline: deps
	$(NS) torture-baseline $(KVER)

unit-test: deps
	$(PYTHON) -m unittest discover -b -s tests -t .

# Every test, with a table of each step's time at the end; the steps are
# in tools/notifier_series/check.py.
check: deps
	$(NS) check

# The checks that do not fit in make check's 45 minutes on a fresh machine
# (the mutation test and the torture baseline of 6.1, the classification
# and series of 6.12); the README quotes their last run.
check-more: deps
	$(NS) check --more
