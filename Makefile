# SPDX-License-Identifier: MIT
# khbpf build: bpf/x.bpf.c -> build/x.bpf.o -> build/x.skel.h -> user code -> build/khbpf
# (build/sched.bpf.o is linked from several sources: SCHED_PARTS)
#
#   make                 build build/khbpf
#   make check           build, then run every test (unit, sanitized unit, integration)
#   make depcheck        user/'s dependencies run one way (tools/depcheck.py)
#   make format-check    clang-format (kernel style) over every C file
#   make build/workloads/rust-spanned   the Rust span example (needs rustc;
#                        not in `all`: tests/integration/spans_rust.sh builds it)
#   make V=1             show the commands
#   make SANITIZE=address,undefined   build user code and tests with sanitizers
#   make fresh-check     the README's two commands on a fresh Debian 12 root (root)
#   make vmtest          khbpf on Debian's kernels under qemu (root; KERNELS=...)
#   make fuzz            run each libFuzzer harness of tests/fuzz for FUZZ_SECONDS (60)
#   VMLINUX_BTF=/path    kernel BTF used to generate build/vmlinux.h
#   VMLINUX_H=/path      use an existing vmlinux.h instead of generating one

.DELETE_ON_ERROR:
.SUFFIXES:
.SECONDARY:

# Builds use every CPU unless -j is given (GNU make 4.3 takes it from here);
# the tests themselves run one at a time (tests/run.sh).
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CC ?= cc
CLANG ?= clang
# Debian installs bpftool in /usr/sbin, which a user's PATH does not have.
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
PKG_CONFIG ?= pkg-config
PYTHON ?= /usr/bin/python3
CLANG_FORMAT ?= clang-format
# rustc from PATH, else rustup's default place; empty when there is none.
RUSTC ?= $(firstword $(shell command -v rustc 2>/dev/null) $(wildcard $(HOME)/.cargo/bin/rustc))

SANITIZE ?=
ifneq ($(SANITIZE),)
BUILD ?= build/sanitize
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
else
BUILD ?= build
SAN_FLAGS :=
endif

# BPF objects, skeletons and vmlinux.h are shared by every user-space build.
BPF_OUT := build
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
VMLINUX_H ?= $(BPF_OUT)/vmlinux.h
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')

DEPS_STAMP := build/.deps-ok
# libdw: the build-id and .gnu_debuglink of stripped objects (user/spans/spandebug.c).
LIBS_PC := libbpf json-c libmicrohttpd libcap libdw
# The version has one home, debian/changelog's first entry (a native
# package: no Debian revision); `khbpf --version` and the .deb both show it.
KHBPF_VERSION := $(shell awk 'NR == 1 && $$1 == "khbpf" { gsub(/[()]/, "", $$2); print $$2 }' debian/changelog)
ifeq ($(KHBPF_VERSION),)
$(error debian/changelog does not start with 'khbpf (VERSION)')
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS ?= -O2 -g
ALL_CFLAGS := $(CPPFLAGS) $(CFLAGS) -std=gnu11 $(WARN) $(SAN_FLAGS) -D_GNU_SOURCE \
	-DKHBPF_VERSION='"$(KHBPF_VERSION)"' -Iinclude -Iuser -I$(BPF_OUT) -MMD -MP
# Recursive on purpose: these are expanded in recipes, after $(DEPS_STAMP) has
# installed the libraries. Read when the Makefile is parsed, a first build on a
# machine without them would link with none (undefined references).
PC_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(LIBS_PC))
PC_LIBS = $(shell $(PKG_CONFIG) --libs $(LIBS_PC))
LDLIBS = $(PC_LIBS) -lelf -lz
LDFLAGS ?=
ALL_LDFLAGS := $(LDFLAGS) $(SAN_FLAGS)

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-Iinclude -I$(BPF_OUT) -I$(dir $(VMLINUX_H))

# The scheduler collector is several sources linked into one object, so one
# skeleton (sched_bpf) with shared maps: sched.bpf.c, which defines the maps
# and globals, first (the skeleton lists them in link order), then the rest.
SCHED_PARTS := bpf/sched.bpf.c bpf/span.bpf.c bpf/wake.bpf.c bpf/targets.bpf.c
SCHED_PART_OBJS := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/sched.parts/%.bpf.o,$(SCHED_PARTS))
BPF_SRCS := $(filter-out $(SCHED_PARTS),$(wildcard bpf/*.bpf.c)) bpf/sched.bpf.c
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BPF_OUT)/%.skel.h,$(BPF_SRCS))

# user/ has a folder per job (user/README.md), each depending only on the
# folders below it (tools/depcheck.py, run by `make check`).
USER_DIRS := lib host document collect spans session report serve cmd
LIB_SRCS := $(filter-out user/cmd/main.c,$(foreach d,$(USER_DIRS),$(wildcard user/$(d)/*.c)))
LIB_OBJS := $(patsubst user/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
LIB := $(BUILD)/libkhbpf.a
KHBPF := $(BUILD)/khbpf

# One tests/<folder>/test_<module>.c per module of user/<folder>/.
TEST_SRCS := $(wildcard tests/*/test_*.c)
TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# Workloads are measured, never sanitized: always the plain build in build/.
WORKLOADS := $(patsubst tests/workloads/%.c,build/workloads/%,$(wildcard tests/workloads/*.c))
WORKLOADS += $(patsubst tests/workloads/%.cc,build/workloads/%,$(wildcard tests/workloads/*.cc))
# What the tests run under or beside (tests/helpers/*.c: subreaper,
# finalcount), plain build only.
HELPERS := $(patsubst tests/helpers/%.c,build/tests/helpers/%,$(wildcard tests/helpers/*.c))

C_FILES := $(wildcard bpf/*.c bpf/*.h user/*/*.c user/*/*.h include/khbpf/*.h tests/*.h \
	tests/*/*.c tests/workloads/*.h tools/*.c)

.PHONY: all man install uninstall install-check deb package-check check depcheck fresh-check vmtest unit-tests workloads demo bench bench-spans bench-usdt bench-span-attach bench-span-memory bench-serve bench-serve-spans soak format format-check clean deps
all: $(KHBPF)

deps: $(DEPS_STAMP)
# NO_INSTALL_DEPS=1 (debian/rules: Build-Depends provide them): only check
# that the libraries are there, install nothing.
$(DEPS_STAMP): tools/install-deps.sh
	$(Q)mkdir -p $(@D)
ifeq ($(NO_INSTALL_DEPS),1)
	$(Q)$(PKG_CONFIG) --exists $(LIBS_PC) || \
		{ echo "khbpf: missing libraries ($(LIBS_PC)); install the Build-Depends of debian/control" >&2; exit 1; }
else
	$(Q)tools/install-deps.sh
endif
	$(Q)$(PKG_CONFIG) --atleast-version=1.1 libbpf || \
		{ echo "khbpf needs libbpf >= 1.1 (found $$($(PKG_CONFIG) --modversion libbpf 2>/dev/null || echo none)); install libbpf-dev from Debian 12 or newer" >&2; exit 1; }
	$(Q)touch $@

$(BPF_OUT)/vmlinux.h: | $(DEPS_STAMP)
	$(Q)test -r "$(VMLINUX_BTF)" || { echo "khbpf: kernel BTF '$(VMLINUX_BTF)' not found; boot a kernel with CONFIG_DEBUG_INFO_BTF=y, or set VMLINUX_BTF=/path/to/vmlinux or VMLINUX_H=/path/to/vmlinux.h" >&2; exit 1; }
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file "$(VMLINUX_BTF)" format c > $@

$(BPF_OUT)/%.bpf.o: bpf/%.bpf.c $(wildcard include/khbpf/*.h bpf/*.h) $(VMLINUX_H) | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(BPF_OUT)/sched.parts/%.bpf.o: bpf/%.bpf.c $(wildcard include/khbpf/*.h bpf/*.h) $(VMLINUX_H) | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

# The static linker resolves each part's extern maps and globals.
$(BPF_OUT)/sched.bpf.o: $(SCHED_PART_OBJS)
	$(call msg,LINK-BPF,$@)
	$(Q)$(BPFTOOL) gen object $@ $^

$(BPF_OUT)/%.skel.h: $(BPF_OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# User code includes skeletons; building every skeleton first keeps the
# dependency simple and exact enough for a project of this size.
$(BUILD)/obj/%.o: user/%.c $(SKELS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(PC_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(KHBPF): $(BUILD)/obj/cmd/main.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%.o: tests/%.c $(SKELS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests -Wno-missing-prototypes $(PC_CFLAGS) -c $< -o $@

$(TESTS): $(BUILD)/tests/%: $(BUILD)/tests/%.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) $^ $(LDLIBS) -lcmocka -o $@

build/workloads/%: tests/workloads/%.c $(wildcard tests/workloads/*.h) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -std=gnu11 $(WARN) -pthread $< -o $@

# C++ workloads: libstdc++'s own USDT probes (throw, catch) fire in them.
build/workloads/%: tests/workloads/%.cc | $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -O2 -g -std=gnu++17 -Wall -Wextra -Werror -pthread $< -o $@

# The span benchmark's workload needs clang: its KHBPF_SPAN site must start
# with the one 5-byte NOP that kernels from 6.18 probe the optimized way.
build/workloads/spanbench: tests/workloads/spanbench.c $(wildcard tests/workloads/*.h) include/khbpf/span.h | $(DEPS_STAMP)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -O2 -g -std=gnu11 $(WARN) -pthread $< -o $@

workloads: $(WORKLOADS)

build/tests/helpers/%: tests/helpers/%.c | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -g -std=gnu11 $(WARN) -D_GNU_SOURCE $< -o $@

# Not in WORKLOADS (tests/workloads/*.c): rustc may be missing here.
build/workloads/rust-spanned: tests/workloads/rust/spanned.rs
	$(Q)test -n "$(RUSTC)" || { echo "khbpf: no rustc in PATH or $(HOME)/.cargo/bin; set RUSTC=/path/to/rustc" >&2; exit 1; }
	$(call msg,RUSTC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(RUSTC) -O --edition 2021 $< -o $@

unit-tests: $(TESTS) $(KHBPF)

# Unit tests and integration tests (real BPF) twice: the plain build, then
# ASan+UBSan (the valgrind run of the demo only on the plain build).
# tests/run.sh prints the closing "N passed, N failed".
# Every program the tests run is installed first (install-deps.sh --with-tests).
check: unit-tests workloads $(HELPERS)
	$(Q)tools/install-deps.sh --with-tests
	$(Q)$(MAKE) --no-print-directory depcheck
	$(Q)$(MAKE) --no-print-directory install-check
	$(Q)$(MAKE) --no-print-directory SANITIZE=address,undefined unit-tests
	$(Q)tests/run.sh build build/sanitize
	$(Q)$(MAKE) --no-print-directory fuzz-check

# user/'s folders depend one way and its modules form no cycle, by includes
# and by calls (the plain build's objects); the check itself first, on
# trees made to fail it.
depcheck: $(KHBPF)
	$(Q)$(PYTHON) tests/tools/test_depcheck.py
	$(Q)$(PYTHON) tools/depcheck.py --objects build/obj

# libFuzzer harnesses (tests/fuzz/fuzz_*.c): the user code built by clang with
# ASan+UBSan and coverage in build/fuzz, each harness linked with libFuzzer.
# `make fuzz` runs each for FUZZ_SECONDS; `make check` runs each for
# FUZZ_CHECK_SECONDS and replays tests/fuzz/regressions/. New inputs go to
# build/fuzz/corpus, crashes to build/fuzz/artifacts.
FUZZ_SECONDS ?= 60
FUZZ_CHECK_SECONDS ?= 10
FUZZ_BUILD := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -std=gnu11 $(WARN) $(FUZZ_SAN) -D_GNU_SOURCE \
	-DKHBPF_VERSION='"$(KHBPF_VERSION)"' -Iinclude -Iuser -I$(BPF_OUT) -MMD -MP
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_TARGETS))
FUZZ_LIB := $(FUZZ_BUILD)/libkhbpf.a
C_FILES += $(wildcard tests/fuzz/*.h)
.PHONY: fuzz fuzz-check fuzz-build

$(FUZZ_BUILD)/obj/%.o: user/%.c $(SKELS) | $(DEPS_STAMP)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(PC_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(patsubst user/%.c,$(FUZZ_BUILD)/obj/%.o,$(LIB_SRCS))
	$(call msg,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(wildcard tests/fuzz/*.h) $(FUZZ_LIB) | $(DEPS_STAMP)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -Wno-missing-prototypes -fsanitize=fuzzer $(PC_CFLAGS) \
		$< $(FUZZ_LIB) $(LDLIBS) -o $@

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	$(Q)tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-check: fuzz-build
	$(Q)tests/fuzz/run.sh --fresh $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)

build/tools/%: tools/%.c $(SKELS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(PC_CFLAGS) $< $(LDLIBS) -o $@

# Overhead against peers (runqlat, bpftrace) and empty programs; see BENCHMARKS.md.
BENCH_SPANS_DEPS := $(KHBPF) build/tools/bench-span-floor build/workloads/spanbench \
	build/workloads/manyfuncs
BENCH_USDT_DEPS := $(KHBPF) build/tools/bench-span-floor build/workloads/usdtbench
bench: $(KHBPF) build/tools/bench-empty $(BENCH_SPANS_DEPS) $(BENCH_USDT_DEPS)
	$(Q)tools/install-deps.sh --with-bench
	$(Q)tools/bench-sched.sh
	$(Q)/usr/bin/python3 tools/bench_fork.py
	$(Q)tools/bench-spans.sh
	$(Q)/usr/bin/python3 tools/bench_usdt.py
	$(Q)/usr/bin/python3 tools/bench_span_attach.py
	$(Q)/usr/bin/python3 tools/bench_serve.py
	$(Q)/usr/bin/python3 tools/bench_serve_spans.py
	$(Q)/usr/bin/python3 tools/bench_accuracy.py
	$(Q)/usr/bin/python3 tools/bench_memory.py
	$(Q)/usr/bin/python3 tools/bench_span_memory.py
	$(Q)/usr/bin/python3 tools/bench_span_rate.py

# `khbpf serve` alone: hackbench overhead against runqlat, scrape time, steady CPU.
bench-serve: $(KHBPF)
	$(Q)tools/install-deps.sh --with-bench
	$(Q)/usr/bin/python3 tools/bench_serve.py

# `khbpf serve` with spans: a switch with spans configured, and a span call,
# against serve without them, runqlat and attach (tools/bench_serve_spans.py).
bench-serve-spans: $(KHBPF) build/tools/bench-empty build/workloads/spanbench
	$(Q)tools/install-deps.sh --with-bench
	$(Q)/usr/bin/python3 tools/bench_serve_spans.py

# `khbpf serve` for 30 minutes under churn: RSS and open fds must stay flat.
soak: $(KHBPF)
	$(Q)/usr/bin/python3 tools/soak_serve.py

# The span part of `make bench` alone: cost per span, then attach and detach
# of 10 to 1000 sites (tools/bench_span_attach.py; `make bench-span-attach` alone).
bench-spans: $(BENCH_SPANS_DEPS)
	$(Q)tools/install-deps.sh --with-bench
	$(Q)tools/bench-spans.sh
	$(Q)/usr/bin/python3 tools/bench_span_attach.py

# Cost per USDT span pair (--usdt-span, with and without keys) beside
# bpftrace counting the same probes and an empty program at each site.
bench-usdt: $(BENCH_USDT_DEPS)
	$(Q)tools/install-deps.sh --with-bench
	$(Q)/usr/bin/python3 tools/bench_usdt.py

# Attach and detach of 10, 100 and 1000 span sites, khbpf's uprobe_multi and
# per-site links next to bpftrace's (BENCH_ATTACH_PER_SITE=1000 and
# BENCH_ATTACH_BPFTRACE=1000 add the slow 1000-site rows; BENCHMARKS.md).
bench-span-attach: $(KHBPF) build/workloads/manyfuncs
	$(Q)/usr/bin/python3 tools/bench_span_attach.py

# Peak RSS of `run` keeping 10^4, 10^5 and 10^6 span records (issue 15, item 4).
bench-span-memory: $(KHBPF) build/workloads/spanbench
	$(Q)/usr/bin/python3 tools/bench_span_memory.py

# The README's two commands on a fresh debootstrap root of Debian 12 holding
# only a clone of this commit (tools/fresh-check.sh; FRESH_FLAGS=--demo-only).
fresh-check:
	$(Q)tools/fresh-check.sh $(FRESH_FLAGS)

# The kernel matrix: Debian's kernels (5.10, 6.1, 6.12, 6.12-rt, the newest)
# booted with virtme-ng on this host's root; KERNELS= and VMTEST_TESTS= choose
# (tools/vmtest.sh --help). Results in build/vmtest/.
vmtest: $(KHBPF) workloads $(HELPERS)
	$(Q)tools/install-deps.sh --with-vmtest
	$(Q)tools/vmtest.sh

# Installation (`make install`, `make uninstall`; PREFIX and DESTDIR as
# usual). The unit is tools/khbpf.service with its paths rewritten for
# BINDIR; the man pages are built from docs/man/*.rst by rst2man
# (python3-docutils), as bpftool's are.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/khbpf
DOCDIR ?= $(PREFIX)/share/doc/khbpf
UNITDIR ?= $(PREFIX)/lib/systemd/system
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
RST2MAN ?= rst2man
MAN_SRCS := $(wildcard docs/man/*.rst)
MANS := $(patsubst docs/man/%.rst,build/man/%,$(MAN_SRCS))
INSTALL_DATA := tools/khbpf.rules.yml docs/khbpf-evidence.schema.json docs/keyhog-profile.schema.json
INSTALL_DOCS := README.md BENCHMARKS.md $(wildcard docs/*.md)

man: $(MANS)

build/man/%: docs/man/%.rst | $(DEPS_STAMP)
	$(call msg,RST2MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(RST2MAN) --halt=warning --no-datestamp $< $@.tmp && mv $@.tmp $@

build/khbpf.service: tools/khbpf.service
	$(call msg,GEN,$@)
	$(Q)sed -e 's|/usr/local/bin/khbpf|$(BINDIR)/khbpf|g' $< > $@.tmp && mv $@.tmp $@

# Rebuilt each time: BINDIR may differ from the last install's.
.PHONY: build/khbpf.service
install: $(KHBPF) man build/khbpf.service
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(DATADIR) \
		$(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(COMPLETIONDIR)
	$(Q)install -m 755 $(KHBPF) $(DESTDIR)$(BINDIR)/khbpf
	$(Q)install -m 644 $(MANS) $(DESTDIR)$(MANDIR)/man8/
	$(Q)install -m 644 build/khbpf.service $(DESTDIR)$(UNITDIR)/khbpf.service
	$(Q)install -m 644 $(INSTALL_DATA) $(DESTDIR)$(DATADIR)/
	$(Q)install -m 644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	$(Q)install -m 644 tools/khbpf.bash-completion $(DESTDIR)$(COMPLETIONDIR)/khbpf

uninstall:
	$(Q)rm -f $(DESTDIR)$(BINDIR)/khbpf $(DESTDIR)$(UNITDIR)/khbpf.service \
		$(DESTDIR)$(COMPLETIONDIR)/khbpf \
		$(patsubst build/man/%,$(DESTDIR)$(MANDIR)/man8/%,$(MANS)) \
		$(addprefix $(DESTDIR)$(DATADIR)/,$(notdir $(INSTALL_DATA))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(INSTALL_DOCS)))
	$(Q)rmdir $(DESTDIR)$(DATADIR) $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# The Debian package (debian/, debhelper): built from a copy of the sources
# in build/deb/ so that its `make clean` leaves this tree's build/ alone;
# leaves build/khbpf_VERSION_ARCH.deb and checks it with lintian.
DEB_ARCH = $(shell dpkg --print-architecture)
DEB := build/khbpf_$(KHBPF_VERSION)_$(DEB_ARCH).deb
deb:
	$(Q)tools/install-deps.sh --with-package
	$(Q)rm -rf build/deb && mkdir -p build/deb/khbpf-$(KHBPF_VERSION)
	$(Q)tar -c --exclude=./build --exclude=./.git . | tar -x -C build/deb/khbpf-$(KHBPF_VERSION)
	$(Q)cd build/deb/khbpf-$(KHBPF_VERSION) && dpkg-buildpackage -us -uc -b
	$(Q)cp build/deb/khbpf_$(KHBPF_VERSION)_$(DEB_ARCH).deb $(DEB)
	$(Q)lintian --fail-on error,warning $(DEB) && echo "deb: $(DEB), lintian clean"

# The package installed from the archive's dependencies into a fresh Debian
# 12 root, booted under systemd-nspawn: the service, /metrics, purge
# (tools/package-check.sh).
package-check: deb
	$(Q)tools/package-check.sh $(DEB)

# What `make install` lays out and removes, the man pages' options against
# --help, the bash completion against --help (tests/tools/).
install-check: $(KHBPF) man
	$(Q)tools/install-deps.sh --with-tests
	$(Q)KHBPF=$(KHBPF) $(PYTHON) tests/tools/test_man_options.py
	$(Q)KHBPF=$(KHBPF) tests/tools/test_bash_completion.sh
	$(Q)tests/tools/test_install.sh

# The first of the README's two commands: khbpf on the bundled demo workload.
demo: $(KHBPF) build/workloads/demo
	$(Q)$(KHBPF) run -- build/workloads/demo

format-check:
	$(Q)$(CLANG_FORMAT) --dry-run --Werror $(C_FILES)

format:
	$(Q)$(CLANG_FORMAT) -i $(C_FILES)

clean:
	$(call msg,CLEAN,build)
	$(Q)rm -rf build

-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/tests/*/*.d)
-include $(wildcard $(FUZZ_BUILD)/obj/*/*.d $(FUZZ_BUILD)/*.d)
