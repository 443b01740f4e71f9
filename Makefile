# aisd — one Makefile for the daemon, the tools, the tests and the benchmark.
#
#   make                 build build/aisd, build/aisctl, build/aisloader
#   make run             install deps, build, start a local cluster under ./run
#   make test            install deps, build, run unit + integration tests
#   make check-unit      unit tests only (Check)
#   make check-fuzz      replay every committed fuzz corpus through its driver (no libFuzzer needed)
#   make check-docs      the documented config keys, aisctl commands and routes against the code,
#                        and the links between the README and the guides (docs/)
#   make check-docs-run  the command blocks of the README and the guides under docs/,
#                        run in order against a fresh local cluster (part of test)
#   make bench           aisd vs nginx, gateway costs, S3 vs native (and vs nginx proxy_pass),
#                        system calls per forwarded request, TLS, auth, and bench-plots (not part of test)
#   make bench-plots     the curves: throughput vs object size, GetBatch speedup vs batch size,
#                        a rebalance timeline (gnuplot)
#   make bench-small     small reads (1 KiB, 10 KiB, 1 MiB) straight to a target vs nginx (tools/bench/small.sh)
#   make bench-list      listing speed over a bucket of N=1000000 objects
#   make bench-scale     one target filled to N=10000000 objects: PUT/GET rate as it fills, listing,
#                        restart after kill -9, RSS, LevelDB size (SCALE_N scales it down;
#                        SCALE_IMG=FILE, as root: on a loop-mounted file system, deleted in seconds)
#   make bench-rebalance rebalance speed, GET during it, PUT with 2 copies vs 1
#   make bench-ml        the ML data path: ShardDataset from aisd vs nginx vs local files, GetBatch vs GETs, archpath vs plain GETs
#   make bench-locality  locality-aware loading and the node cache on rate-limited network namespaces, beside the model
#                        (root; the full matrix: 4 and 8 nodes, copies 1 and 2, 4/8/32 Mbit/s, caches 0.25-2x)
#   make fuzz            run every libFuzzer driver for FUZZ_SECONDS each
#   make style           clang-format the tree
#   make install         binaries, man pages, example configs, docs, the systemd unit and the
#                        system user aisd (sysusers.d, tmpfiles.d) under PREFIX
#   make deb             the Debian packages aisd and aisctl under build/deb (debhelper, lintian)
#
#   V=1 verbose, SANITIZE=address,undefined, DEVELOPER=1 (or CI=true) -Werror,
#   KEEP=1 keeps integration temp dirs.

PREFIX     ?= /usr/local
SYSCONFDIR ?= $(PREFIX)/etc
BUILD      ?= build
CC         ?= cc
PKGS       := libevent libevent_pthreads libcurl jansson openssl libxxhash zlib libarchive
FUZZ_SECONDS ?= 20

Q := @
ifeq ($(V),1)
Q :=
endif

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wvla -Wwrite-strings -Wno-unused-parameter
ifneq ($(filter 1 true,$(DEVELOPER) $(CI)),)
WARN += -Werror
endif

OPT      ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -Iinclude -MMD -MP -pthread \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lleveldb -lhttp_parser -lexpat -lisal -lpthread -lm
ifneq ($(SANITIZE),)
CFLAGS   += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZE)
BUILD    := build-san
endif

# Libraries: everything under src/ except the program entry points.
# Every subsystem folder (core, http, httpc, store, cluster, target, ...)
# goes into libaisd.a; aisctl (src/cli) is a program of its own.
LIB_SRC    := $(filter-out src/cli/%,$(wildcard src/*/*.c))
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB        := $(BUILD)/libaisd.a

AISD_OBJ      := $(BUILD)/src/aisd.o
AISCTL_SRC    := $(wildcard src/cli/*.c)
AISCTL_OBJ    := $(AISCTL_SRC:%.c=$(BUILD)/%.o)
LOADER_SRC    := $(wildcard tools/aisloader/*.c)
LOADER_OBJ    := $(LOADER_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_COMMON := $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c))
UNIT_COMMON_OBJ := $(UNIT_COMMON:%.c=$(BUILD)/%.o)

# The fuzz drivers, each linked with tests/fuzz/replay.c (a main that runs
# every input once) for check-fuzz; `make fuzz` builds them with libFuzzer.
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/fuzz/%)

PROGS := $(BUILD)/aisd $(BUILD)/aisctl $(BUILD)/aisloader

.SECONDARY:
.PHONY: all deps run stop wheel deb test check-unit check-fuzz check-docs check-docs-run check-deps check-integration bench bench-plots bench-small bench-versioning bench-list bench-sse bench-policy bench-etl bench-scale bench-ml bench-locality bench-rebalance bench-ishard bench-dsort s3-tests fuzz style install clean
all: $(PROGS)

deps:
	$(Q)./tools/install-deps.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/aisd: $(AISD_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/aisctl: $(AISCTL_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/aisloader: $(LOADER_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The encode micro-benchmark of tools/bench/ec.sh (not installed).
$(BUILD)/ecenc: $(BUILD)/tools/bench/ecenc.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The identity transformer in C of tools/bench/etl.sh (not installed).
$(BUILD)/etlident: $(BUILD)/tools/bench/etlident.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^

# The fast filler of tools/bench/scale.sh and the restart test: objects
# written through the store's own write protocol into a stopped target's
# mountpaths (not installed).
$(BUILD)/scaleload: $(BUILD)/tools/bench/scaleload.o $(BUILD)/tools/aisloader/pattern.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(UNIT_COMMON_OBJ) $(LIB)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(shell pkg-config --libs check)

$(BUILD)/tests/fuzz/%: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/replay.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIB) $(LDLIBS)

# the aisctl config parser lives outside libaisd.a
$(BUILD)/tests/fuzz/fuzz_aisctl_config: $(BUILD)/src/cli/cfgfile.o

# The Python package as a wheel, built from a copy of tools/python so that
# setuptools' build/ and egg-info stay out of the source tree.
PYVER := $(shell sed -n 's/^\#define AISD_VERSION "\(.*\)"/\1/p' include/aisd/version.h)
WHEEL := $(BUILD)/dist/aisd-$(PYVER)-py3-none-any.whl
wheel: $(WHEEL)
$(WHEEL): tools/python/pyproject.toml tools/python/README.md $(wildcard tools/python/aisd/*.py)
	@$(if $(Q),echo "  WHEEL   $@")
	$(Q)rm -rf $(BUILD)/pysrc && mkdir -p $(BUILD)/pysrc $(BUILD)/dist && \
	cp -r tools/python/pyproject.toml tools/python/README.md tools/python/aisd $(BUILD)/pysrc/ && \
	rm -rf $(BUILD)/pysrc/aisd/__pycache__ && \
	/usr/bin/python3 -m pip wheel -q --no-deps --no-index --no-build-isolation -w $(BUILD)/dist $(BUILD)/pysrc

# The Debian packages (deploy/debian): a copy of deploy/debian with a
# changelog of the daemon's version, built by dpkg-buildpackage (binaries
# only, unsigned) with the programs compiled under build/deb/obj with
# Debian's hardening flags; lintian fails the rule on an error. Rebuilt
# when a source, man page, config, doc or packaging file changes. The files:
#   $(BUILD)/deb/aisd_VERSION_ARCH.deb, $(BUILD)/deb/aisctl_VERSION_ARCH.deb
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_DIR  := $(BUILD)/deb
DEBS     := $(DEB_DIR)/aisd_$(PYVER)_$(DEB_ARCH).deb $(DEB_DIR)/aisctl_$(PYVER)_$(DEB_ARCH).deb
DEB_INPUTS := Makefile $(LIB_SRC) $(AISCTL_SRC) $(LOADER_SRC) $(AISD_OBJ:$(BUILD)/%.o=%.c) \
	$(wildcard include/aisd/*.h src/*/*.h tools/aisloader/*.h) $(wildcard man/*.[158]) $(wildcard conf/*.conf) \
	$(wildcard deploy/debian/* deploy/debian/source/*) tools/completion/aisctl.bash \
	README.md ARCHITECTURE.md $(wildcard docs/*.md) include/aisd/version.h
deb: $(DEBS)
$(DEBS) &: $(DEB_INPUTS)
	@$(if $(Q),echo "  DEB     $(DEBS)")
	$(Q)rm -rf $(DEB_DIR)/aisd-$(PYVER) $(DEBS) && mkdir -p $(DEB_DIR)/aisd-$(PYVER) && \
	cp -r deploy/debian $(DEB_DIR)/aisd-$(PYVER)/debian && \
	when=$$(git log -1 --format=%aD 2>/dev/null || date -R) && \
	printf 'aisd (%s) unstable; urgency=medium\n\n  * Built from the source tree by make deb.\n\n -- aisd developers <aisd@example.org>  %s\n' \
	    "$(PYVER)" "$$when" >$(DEB_DIR)/aisd-$(PYVER)/debian/changelog
	$(Q)cd $(DEB_DIR)/aisd-$(PYVER) && \
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL AISD_TOP=$(CURDIR) AISD_OBJ=$(abspath $(DEB_DIR))/obj \
	    DEB_BUILD_OPTIONS="parallel=$$(nproc) noddebs" dpkg-buildpackage -b -us -uc \
	    $(if $(Q),>../build.log 2>&1 || { tail -40 ../build.log; exit 1; })
	$(Q)lintian --fail-on error $(DEBS) || { rm -f $(DEBS); exit 1; }

run: deps all
	$(Q)./deploy/local/cluster.sh up -d ./run

stop:
	$(Q)./deploy/local/cluster.sh down -d ./run

check-unit: all $(UNIT_BIN)
	$(Q)./tests/run-unit.sh $(UNIT_BIN) $(wildcard tests/unit/test_*.py)

check-fuzz: $(FUZZ_BIN)
	$(Q)rc=0; for b in $(FUZZ_BIN); do \
		n=$$(basename $$b); \
		$$b tests/fuzz/corpus/$$n >/dev/null || { echo "fuzz replay: $$n FAILED on its corpus"; rc=1; }; \
	done; \
	echo "fuzz replay: $(words $(FUZZ_BIN)) drivers, $$(find tests/fuzz/corpus -type f | wc -l) inputs, $$([ $$rc = 0 ] && echo ok || echo FAILED)"; \
	exit $$rc

# The documented lists (config keys, aisctl commands, native routes) against
# the tables in the code (tests/check-docs.py; no build needed).
check-docs:
	$(Q)python3 tests/check-docs.py

# The README and the guides (docs/) as a user runs them:
# their command blocks in order against a fresh local cluster each, on free
# ports, under a temp dir (tests/check-docs-run.py; blocks marked
# <!-- norun: WHY --> are skipped, saying why). DOCS="README.md docs/s3.md"
# runs only those files.
check-docs-run: all
	$(Q)BUILD=$(BUILD) /usr/bin/python3 tests/check-docs-run.py $(DOCS)

# No new dependency cycle between the subsystems of src/ (s3 <-> target is
# the one left: S3 reaches the target role's object layer).
check-deps:
	$(Q)python3 tools/subsys-deps.py --check --allow s3,target >/dev/null

# Integration tests JOBS at a time (those marked "# serial" alone): most
# wait on daemons, sleeps and the network, so 2 fit 2 cores; JOBS=1 runs
# them one after another with their output as it comes.
JOBS ?= 2
check-integration: all $(BUILD)/scaleload $(WHEEL)
	$(Q)BUILD=$(BUILD) JOBS=$(JOBS) ./tests/integration/run.sh

# ceph/s3-tests against a local 1-gateway 3-target cluster; the suite is a
# checkout the developer points S3TESTS at (nothing is fetched), extra
# pytest arguments in S3TESTS_ARGS (e.g. -k object_lock). Not part of test.
s3-tests: all
	$(Q)[ -n "$(S3TESTS)" ] || { echo "usage: make s3-tests S3TESTS=/path/to/s3-tests [S3TESTS_ARGS='-k object_lock']"; exit 2; }
	$(Q)./tools/install-deps.sh --s3tests
	$(Q)BUILD=$(BUILD) ./tools/s3tests.sh $(S3TESTS) $(S3TESTS_ARGS)

# Every suite runs even when an earlier one fails; the closing lines say
# which failed, and the target fails if any did.
test: deps
	$(Q)$(MAKE) --no-print-directory all $(UNIT_BIN) $(FUZZ_BIN)
	$(Q)u=0; f=0; d=0; i=0; \
	$(MAKE) --no-print-directory check-unit || u=1; \
	$(MAKE) --no-print-directory check-fuzz || f=1; \
	$(MAKE) --no-print-directory check-docs check-deps check-docs-run || d=1; \
	$(MAKE) --no-print-directory deb || i=1; \
	$(MAKE) --no-print-directory check-integration || i=1; \
	echo "test: unit $$([ $$u = 0 ] && echo ok || echo FAILED), fuzz replay $$([ $$f = 0 ] && echo ok || echo FAILED), docs and dependency cycles $$([ $$d = 0 ] && echo ok || echo FAILED), integration $$([ $$i = 0 ] && echo ok || echo FAILED)"; \
	[ $$u = 0 ] && [ $$f = 0 ] && [ $$d = 0 ] && [ $$i = 0 ]

bench-small: deps all
	$(Q)BUILD=$(BUILD) ./tools/bench/small.sh

# S3 PUT/GET of 10 KiB and 64 MiB into a versioned bucket vs a plain one.
bench-versioning: deps all
	$(Q)BUILD=$(BUILD) ./tools/bench/versioning.sh

# S3 GET/PUT of 64 MiB and 10 KiB with SSE-C vs plain (tools/bench/sse.py).
bench-sse: deps all
	$(Q)d=$$(mktemp -d); AISD_BIN=$(BUILD)/aisd AISD_DIR=$$d /usr/bin/python3 tools/bench/sse.py; rc=$$?; \
	rm -rf $$d; exit $$rc

# Anonymous S3 GETs under a bucket policy of 21 statements, wrk at the target (tools/bench/policy.py).
bench-policy: deps all
	$(Q)d=$$(mktemp -d); AISD_BIN=$(BUILD)/aisd AISD_DIR=$$d /usr/bin/python3 tools/bench/policy.py; rc=$$?; \
	rm -rf $$d; exit $$rc

bench-list: deps all
	$(Q)BUILD=$(BUILD) ./tools/bench/list.sh

# Inline transform (GET ?etl=) of a 1 MiB object vs a plain GET, and an offline
# JPEG resize over a WebDataset vs the same on a client (tools/bench/etl.sh).
bench-etl: deps all $(BUILD)/etlident
	$(Q)BUILD=$(BUILD) ./tools/bench/etl.sh

bench-scale: deps all $(BUILD)/scaleload
	$(Q)BUILD=$(BUILD) ./tools/bench/scale.sh

bench-rebalance: deps all
	$(Q)BUILD=$(BUILD) ./tools/bench/rebalance.sh

# ishard in the cluster vs python3 -m aisd.shard on a client (N, SIZE).
bench-ishard: deps all
	$(Q)d=$$(mktemp -d) && AISD_BIN=$(BUILD)/aisd AISCTL=$(BUILD)/aisctl AISD_DIR=$$d \
		/usr/bin/python3 tools/bench/ishard.py; rc=$$?; rm -rf $$d; exit $$rc

# dsort shuffle in the cluster vs the client route (BYTES, SAMPLE, SHARD, MEMLIMIT).
bench-dsort: deps all
	$(Q)d=$$(mktemp -d) && AISD_BIN=$(BUILD)/aisd AISCTL=$(BUILD)/aisctl AISD_DIR=$$d \
		/usr/bin/python3 tools/bench/dsort.py; rc=$$?; rm -rf $$d; exit $$rc

# The ML benchmarks, each a script of its own (results in $(BUILD)/bench-*.md).
BENCH_ML := tools/bench/ml.sh tools/bench/getbatch.sh tools/bench/archpath.sh tools/bench/locality.sh

bench-ml: deps all
	$(Q)for s in $(BENCH_ML); do [ ! -e $$s ] || BUILD=$(BUILD) ./$$s || exit 1; done

# The whole netns matrix (hours on a shared machine; bench-ml runs a quick
# subset of it). NODES, COPIES, RATES, CACHES, ... narrow it (locality.sh).
bench-locality: deps all
	$(Q)MATRIX=full BUILD=$(BUILD) ./tools/bench/locality.sh

# The curves (gnuplot, PNGs under benchmarks/ beside BENCHMARKS.md): throughput
# against object size, GetBatch's speedup against the batch size, a
# rebalance's timeline (bytes moved, GETs/s) as a target joins under load.
bench-plots: all
	$(Q)./tools/install-deps.sh --bench
	$(Q)BUILD=$(BUILD) ./tools/bench/sizes.sh
	$(Q)BUILD=$(BUILD) PLOTDIR=benchmarks SIZES=1K,10K,100K,1M BATCHES=4,16,64,256 ROUNDS=1 DUR=3 OBJECTS=512 \
		./tools/bench/getbatch.sh
	$(Q)BUILD=$(BUILD) PLOTDIR=benchmarks NOBJ=256 SIZE=16M DUR=8 ./tools/bench/rebalance.sh

bench: deps all $(BUILD)/ecenc
	$(Q)$(MAKE) --no-print-directory bench-plots
	$(Q)BUILD=$(BUILD) ./tools/bench/bench.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/small.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/gateway.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/rebalance.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/s3.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/versioning.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/syscalls.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/tls.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/auth.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/ec.sh
	$(Q)BUILD=$(BUILD) ./tools/bench/remote.sh

fuzz:
	$(Q)./tests/fuzz/run.sh $(FUZZ_SECONDS)

style:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h')

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8 \
	    $(DESTDIR)$(SYSCONFDIR)/aisd $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	    $(DESTDIR)$(PREFIX)/share/doc/aisd/docs
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 $(wildcard man/*.5) $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 $(wildcard man/*.8) $(DESTDIR)$(PREFIX)/share/man/man8/
	@# configs: every install refreshes NAME.conf.example; NAME.conf is
	@# written only where there is none, so an edited config is kept
	$(Q)for f in $(wildcard conf/*.conf); do \
	    d=$(DESTDIR)$(SYSCONFDIR)/aisd/$$(basename $$f); \
	    install -m 644 $$f $$d.example; \
	    if [ -e $$d ]; then echo "install: kept $$d (the new default is $$d.example)"; \
	    else install -m 644 $$f $$d; fi; \
	done
	install -m 644 README.md ARCHITECTURE.md $(DESTDIR)$(PREFIX)/share/doc/aisd/
	install -m 644 $(wildcard docs/*.md) $(DESTDIR)$(PREFIX)/share/doc/aisd/docs/
	install -m 644 tools/completion/aisctl.bash \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/aisctl
	@# the package's hardened unit (user aisd), with this install's paths
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed -e 's|/usr/bin/aisd|$(PREFIX)/bin/aisd|g' -e 's|/etc/aisd/|$(SYSCONFDIR)/aisd/|g' \
	    -e 's|^# Installed by the aisd Debian package;|# Installed by make install (PREFIX $(PREFIX));|' \
	    deploy/debian/aisd@.service >$(DESTDIR)$(PREFIX)/lib/systemd/system/aisd@.service
	chmod 644 $(DESTDIR)$(PREFIX)/lib/systemd/system/aisd@.service
	@# the package's system user and directories (sysusers.d, tmpfiles.d),
	@# applied at once when installing into this system as root
	install -d $(DESTDIR)$(PREFIX)/lib/sysusers.d $(DESTDIR)$(PREFIX)/lib/tmpfiles.d
	install -m 644 deploy/debian/aisd.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/aisd.conf
	sed -e 's| /etc/aisd | $(SYSCONFDIR)/aisd |' deploy/debian/aisd.tmpfiles >$(DESTDIR)$(PREFIX)/lib/tmpfiles.d/aisd.conf
	chmod 644 $(DESTDIR)$(PREFIX)/lib/tmpfiles.d/aisd.conf
	$(Q)if [ -n "$(DESTDIR)" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null; then \
	    systemd-sysusers $(PREFIX)/lib/sysusers.d/aisd.conf && \
	    systemd-tmpfiles --create $(PREFIX)/lib/tmpfiles.d/aisd.conf && \
	    echo "install: user aisd, $(SYSCONFDIR)/aisd root:aisd 0750, /var/lib/aisd and /var/log/aisd aisd:aisd 0750"; \
	else echo "install: as root, make the user aisd and its directories: systemd-sysusers $(PREFIX)/lib/sysusers.d/aisd.conf && systemd-tmpfiles --create $(PREFIX)/lib/tmpfiles.d/aisd.conf"; fi

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
