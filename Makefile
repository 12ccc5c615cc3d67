# SPDX-License-Identifier: GPL-2.0-only
#
# vtpu top-level build.
#
#   make            build vtpu.ko and the userspace tests
#   make check      install what is missing, build, checkpatch, unit tests,
#                   kselftests in QEMU; one summary line per suite
#   make kselftest [T=<binary>]   kselftests in QEMU (all, or one binary)
#   make check-debug  kselftests and fuzzer on a KASAN/lockdep/kmemleak/
#                   failslab kernel built from linux-source (not in check)
#   make vm-shell   interactive QEMU guest with vtpu.ko loaded
#   make clean
#
# KDIR=<kernel build dir> builds against another tree (default: the
# Debian 6.12 headers tools/deps.sh installs). V=1 for verbose kbuild.

BUILD ?= $(CURDIR)/build
# The userspace alone (libraries, tools, Python module, their install and
# packages) needs no kernel packages: those goals skip tools/deps.sh and
# its config.mk, and want only the -dev packages `tools/deps.sh
# --userspace` installs.
USERSPACE_GOALS := userspace install uninstall deb
ifneq ($(MAKECMDGOALS),)
ifeq ($(filter-out $(USERSPACE_GOALS),$(MAKECMDGOALS)),)
USERSPACE_ONLY := 1
endif
endif
ifdef USERSPACE_ONLY
-include $(BUILD)/config.mk
else
include $(BUILD)/config.mk
endif

KDIR ?= $(DEPS_KDIR)
MODULE := driver/vtpu.ko

# What the kselftests expect (they read it back from the environment).
VM_PARAMS ?= num_devices=2 num_cores=2 hbm_mib=32 vmem_kib=1024 job_timeout_ms=2000
# How long `make check-debug` fuzzes (twice: plain and under failslab).
DEBUG_FUZZ_SECONDS ?= 120

CC ?= gcc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror
USER_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -Iuapi \
	$(shell pkg-config --cflags libdrm)
USER_LIBS := $(shell pkg-config --libs libdrm)
SAN := -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer \
	-fno-sanitize-recover=all

# The executor and validator are plain C shared by vtpu.ko and userspace
# (host backend, unit tests, benchmarks). No FMA contraction and no
# -march: results must be bit-identical to the kernel's builds (MATMUL's
# fused multiply-adds are explicit). The executor is built three times,
# as in driver/Kbuild: SSE2, AVX2+FMA and AVX-512F, chosen at run time.
EXEC_SRCS := $(wildcard driver/vtpu_prog.c driver/vtpu_exec.c \
	driver/vtpu_exec_avx2.c driver/vtpu_exec_avx512.c)
EXEC_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC -ffp-contract=off \
	-fno-math-errno -Iuapi -Idriver
EXEC_OBJS := $(patsubst driver/%.c,$(BUILD)/obj/%.o,$(EXEC_SRCS))
EXEC_SAN_OBJS := $(patsubst driver/%.c,$(BUILD)/obj-san/%.o,$(EXEC_SRCS))
EXEC_HDRS := $(wildcard driver/vtpu_prog.h driver/vtpu_exec.h \
	driver/vtpu_compat.h driver/vtpu_user_compat.h) uapi/drm/vtpu_isa.h
TEST_HDRS := $(wildcard tests/common/*.h)

# The runtime (libvtpu): for now its submission queue.
RT_SRCS := $(wildcard runtime/*.c)
RT_HDRS := $(wildcard runtime/*.h runtime/include/*.h)
RT_CFLAGS := $(USER_CFLAGS) -fPIC -Iruntime -Iruntime/include \
	-Icompiler/include -Icompiler -Idriver -I$(BUILD)/gen
RT_OBJS := $(patsubst runtime/%.c,$(BUILD)/obj/rt/%.o,$(RT_SRCS))
RT_SAN_OBJS := $(patsubst runtime/%.c,$(BUILD)/obj-san/rt/%.o,$(RT_SRCS))
RT_LIBS := $(USER_LIBS) -luring -lyajl -lxxhash -lprotobuf-c -lpthread -lm
# libvtpu: the runtime with the compiler and the executor inside, static
# and shared (with a versioned symbol map); -san for the host tests.
LIBVTPU := $(BUILD)/lib/libvtpu.a
LIBVTPU_SO := $(BUILD)/lib/libvtpu.so.0.1
LIBVTPU_SAN := $(BUILD)/lib/libvtpu-san.a
# The installed static library: the same objects linked into one, with
# every global the version map does not export made local.
LIBVTPU_PUB := $(BUILD)/lib/public/libvtpu.a
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/vtpu
LICENSE_FILES := COPYING $(wildcard LICENSES/*/*)
# vtpu-bench is a developer's tool, not installed: nor is its page.
MAN_PAGES := $(filter-out man/vtpu-bench.1,$(wildcard man/*.[0-9]))

# The graph compiler: a library the runtime, the tools and the tests link.
CC_SRCS := $(wildcard compiler/*.c compiler/onnx/*.c)
CC_HDRS := $(wildcard compiler/*.h compiler/onnx/*.h compiler/include/*.h)
CC_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -fPIC -Icompiler/include -Icompiler \
	-Iuapi -Idriver
# ONNX's protobuf schema, compiled by protoc-c at build time from the
# onnx.proto Debian ships (libonnx-dev); the generated code is not ours.
GEN := $(BUILD)/gen
ONNX_PROTO := /usr/include/onnx/onnx.proto
ONNX_GEN := $(GEN)/onnx.pb-c.c $(GEN)/onnx.pb-c.h
CC_CFLAGS += -I$(GEN)
# The compile cache keys programs by the compiler that made them: a hash
# of its sources, so a changed compiler never reuses an old program.
BUILD_ID_H := $(GEN)/vtpu_build_id.h
CC_OBJS := $(patsubst compiler/%.c,$(BUILD)/obj/cc/%.o,$(CC_SRCS)) \
	$(BUILD)/obj/cc/onnx.pb-c.o
CC_SAN_OBJS := $(patsubst compiler/%.c,$(BUILD)/obj-san/cc/%.o,$(CC_SRCS)) \
	$(BUILD)/obj-san/cc/onnx.pb-c.o

E2E_SRCS := $(wildcard tests/e2e/*.c)
E2E_BINS := $(patsubst tests/e2e/%.c,$(BUILD)/tests/e2e/%,$(E2E_SRCS))
# The README's example, cut out of README.md so that it cannot rot.
EXAMPLE := $(BUILD)/examples/readme_mlp

KSFT_SRCS := $(wildcard tests/kselftest/*.c)
KSFT_BINS := $(patsubst tests/kselftest/%.c,$(BUILD)/tests/kselftest/%,$(KSFT_SRCS))
KSFT_HDRS := $(wildcard tests/kselftest/*.h)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

BENCH := $(BUILD)/bin/vtpu-bench
BENCH_SRCS := $(wildcard tools/bench/*.c)

.PHONY: all module tests clean check checkpatch unit kselftest vm-shell deps \
	bench bench-models fuzz fuzz-onnx install e2e conformance conformance-check hlo demo

COMPILE_TOOL := $(BUILD)/bin/vtpu-compile
RUN_TOOL := $(BUILD)/bin/vtpu-run
SMI_TOOL := $(BUILD)/bin/vtpu-smi
CONFORMANCE := $(BUILD)/bin/vtpu-conformance
HLO_FUZZ := $(BUILD)/bin/hlo-fuzz
ONNX_FUZZ := $(BUILD)/bin/onnx-fuzz
KFUZZ := $(BUILD)/bin/vtpu-kfuzz

all: module tests $(BENCH) $(COMPILE_TOOL) $(HLO_FUZZ) $(ONNX_FUZZ) $(LIBVTPU_SO) \
	$(RUN_TOOL) $(SMI_TOOL) $(CONFORMANCE) $(KFUZZ) python-build $(LIBVTPU_PUB)

# What `make install` installs, built without the kernel packages.
.PHONY: userspace
userspace: $(LIBVTPU_PUB) $(LIBVTPU_SO) $(RUN_TOOL) $(COMPILE_TOOL) $(SMI_TOOL) \
	python-build

$(COMPILE_TOOL): tools/vtpu-compile.c compiler/include/vtpu_compiler.h \
		runtime/include/vtpu.h $(LIBVTPU)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) $(LDFLAGS) -Icompiler/include \
		-Iruntime/include -o $@ $< \
		$(LIBVTPU) $(RT_LIBS)


$(RUN_TOOL): tools/vtpu-run.c $(LIBVTPU) $(RT_HDRS) $(CC_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LDFLAGS) -Iruntime/include -Icompiler/include -I$(GEN) \
		-o $@ $< $(LIBVTPU) $(RT_LIBS)

$(SMI_TOOL): tools/vtpu-smi.c uapi/drm/vtpu_accel.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(LDFLAGS) -o $@ $< $(USER_LIBS) -lyajl

$(CONFORMANCE): tests/conformance/conformance.c $(LIBVTPU) $(RT_HDRS) $(CC_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -Iruntime/include -Icompiler/include -I$(GEN) \
		-o $@ $< $(LIBVTPU) $(RT_LIBS)

# The Python module (runtime/python): the C extension vtpu._vtpu, linked
# with libvtpu.a (its -fPIC objects; libvtpu's symbols stay inside), and
# the pure-Python package around it, laid out in BUILD/python so that
# PYTHONPATH=BUILD/python imports it. Debian's interpreter and numpy,
# whatever python3 comes first on PATH.
PYTHON ?= /usr/bin/python3
PY_SRCS := $(wildcard runtime/python/ext/*.c)
PY_FILES := $(wildcard runtime/python/vtpu/*.py runtime/python/vtpu/*.pyi) \
	runtime/python/vtpu/py.typed
PY_DIR := $(BUILD)/python/vtpu
PY_EXT := $(PY_DIR)/_vtpu$(shell $(PYTHON) -c \
	'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
PY_CFLAGS := -isystem $(shell $(PYTHON) -c \
	'import sysconfig; print(sysconfig.get_paths()["include"])') \
	-isystem $(shell $(PYTHON) -c 'import numpy; print(numpy.get_include())')
PY_VER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# Where `make install` puts it: Debian's layout (dist-packages).
PY_SITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VER)/dist-packages)

.PHONY: python python-build
python-build: $(PY_EXT) $(patsubst runtime/python/vtpu/%,$(PY_DIR)/%,$(PY_FILES))

$(PY_EXT): $(PY_SRCS) runtime/python/ext/pyvtpu.h $(LIBVTPU) $(RT_HDRS) $(CC_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) $(LDFLAGS) -fPIC -fvisibility=hidden -shared $(PY_CFLAGS) \
		-Iruntime/include -Icompiler/include -Iruntime/python/ext \
		-o $@ $(PY_SRCS) $(LIBVTPU) $(RT_LIBS) -Wl,--exclude-libs,ALL

$(PY_DIR)/%: runtime/python/vtpu/%
	@mkdir -p $(@D)
	cp $< $@

# The python suite: tests/python on the host backend, then its accel
# tests in QEMU; the README's Python example on both.
python: module python-build $(BUILD)/examples/readme_python.py
	@PYTHON=$(PYTHON) tools/python.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)"

# ONNX's own backend test data, on the host backend (CONFORMANCE_ARGS=
# --category simple, say, for a quick run).
conformance: $(CONFORMANCE)
	@VTPU_BACKEND=host $(CONFORMANCE) $(CONFORMANCE_ARGS) \
		/usr/share/libonnx-testdata/data

# The suite `make check` runs: host backend here with the expected
# failures (tests/conformance/xfail), then accel in QEMU, which must
# reproduce the host's outputs bit for bit.
# The conformance run checks results, not the watchdog (the kselftests
# do): under TCG the biggest test models' jobs take seconds, so the job
# timeout there is 20 s rather than the kselftests' 2.
CONFORMANCE_VM_PARAMS ?= $(patsubst job_timeout_ms=%,job_timeout_ms=20000,$(VM_PARAMS))

conformance-check: module $(CONFORMANCE)
	@tools/conformance.sh $(BUILD) $(CURDIR)/$(MODULE) "$(CONFORMANCE_VM_PARAMS)"

# XLA HLO as JAX and torch-xla emit it (tests/hlo/corpus): every module
# on the host backend against tests/hlo/hlo_ref.py's independent NumPy
# evaluation, then on the accel backend in QEMU, bit for bit the host's.
.PHONY: hlo
hlo: module $(RUN_TOOL)
	@tests/hlo/run.sh $(BUILD) $(CURDIR)/$(MODULE) "$(CONFORMANCE_VM_PARAMS)"

# Real models exported by torch.onnx (tools/zoo/export.py, cached in
# BUILD/zoo) on the host backend, checked against PyTorch's outputs; two
# small ones again on the accel backend in QEMU, bit for bit the host's.
.PHONY: zoo
zoo: module $(RUN_TOOL)
	@tools/zoo/zoo.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)" $(ZOO_MODELS)

demo: deps module userspace
	@tools/demo.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)"

# libFuzzer targets (clang), linked with the whole compiler.
FUZZ_LINK = clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=all -Icompiler/include -Icompiler -Iuapi \
	-Idriver -ffp-contract=off \
	-I$(GEN) -o $@ $< $(CC_SRCS) $(GEN)/onnx.pb-c.c $(EXEC_SRCS) \
	-lxxhash -lprotobuf-c -lpthread -lm

# The HLO parser; `make fuzz` runs it.
$(HLO_FUZZ): tests/fuzz/hlo_fuzz.c $(CC_SRCS) $(CC_HDRS) $(EXEC_SRCS) $(EXEC_HDRS) \
		$(ONNX_GEN) $(BUILD_ID_H)
	@mkdir -p $(@D)
	$(FUZZ_LINK)

fuzz: $(HLO_FUZZ)
	@mkdir -p $(BUILD)/fuzz-corpus
	$(HLO_FUZZ) -dict=tests/fuzz/hlo.dict -max_len=32768 -timeout=5 \
		-max_total_time=$${FUZZ_SECONDS:-60} -artifact_prefix=$(BUILD)/ \
		$(BUILD)/fuzz-corpus tests/fuzz/hlo_corpus tests/hlo/corpus

# The ONNX frontend and the compiler behind it, seeded with every model
# of ONNX's test data (copied: libFuzzer adds to its first directory).
# vtpu_model_info() too, which reads the signature off the wire format:
# checked against a whole unpack of the same bytes.
$(ONNX_FUZZ): tests/fuzz/onnx_fuzz.c $(CC_SRCS) $(CC_HDRS) $(EXEC_SRCS) \
		$(EXEC_HDRS) $(ONNX_GEN) $(BUILD_ID_H) runtime/model.c \
		runtime/tensor.c
	@mkdir -p $(@D)
	$(FUZZ_LINK) -Iruntime/include runtime/model.c runtime/tensor.c

fuzz-onnx: $(ONNX_FUZZ)
	@mkdir -p $(BUILD)/onnx-fuzz-corpus $(BUILD)/onnx-fuzz-seeds
	@for d in /usr/share/libonnx-testdata/data/*/*/; do \
		cp -n "$$d/model.onnx" \
		"$(BUILD)/onnx-fuzz-seeds/$$(basename $$d).onnx" 2>/dev/null; \
	done; true
	$(ONNX_FUZZ) -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
		-max_total_time=$${FUZZ_SECONDS:-60} -artifact_prefix=$(BUILD)/ \
		$(BUILD)/onnx-fuzz-corpus $(BUILD)/onnx-fuzz-seeds

# The uAPI fuzzer, with the host's copy of the program validator as its
# oracle; `make fuzz-kernel [SECONDS=N] [SEED=N]` runs it in the VM.
KFUZZ_SRCS := $(wildcard tests/fuzz/kfuzz*.c)
$(KFUZZ): $(KFUZZ_SRCS) tests/fuzz/kfuzz.h $(TEST_HDRS) $(EXEC_OBJS) \
		uapi/drm/vtpu_accel.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -Idriver -Itests/common \
		-o $@ $(KFUZZ_SRCS) $(EXEC_OBJS) $(USER_LIBS) -luring -lm

.PHONY: fuzz-kernel
fuzz-kernel: module $(KFUZZ)
	@SEED=$(SEED) tools/fuzz-kernel.sh $(BUILD) $(CURDIR)/$(MODULE) \
		"$(VM_PARAMS)" $(or $(SECONDS),60)

$(BENCH): $(BENCH_SRCS) tools/bench/bench.h $(LIBVTPU) \
		$(TEST_HDRS) $(KSFT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -Idriver -Iruntime -Itests/common \
		-Icompiler/include -Iruntime/include \
		-Itests/kselftest -Itools/bench -isystem $(KSFT_DIR) \
		-o $@ $(BENCH_SRCS) $(LIBVTPU) $(RT_LIBS) -lopenblas

# Benchmarks print one figure a line; the device suites run in the VM,
# without the slab debugging the tests boot with (they measure the kernel
# users run), and with one OpenBLAS thread (vtpu-bench links OpenBLAS,
# whose idle threads would otherwise spin on the guest's CPUs).
# OpenBLAS 0.3.21 takes CPUs newer than it for a Prescott and runs its
# SSE3 kernels (this machine's Sapphire Rapids, say): the baseline gets
# the best kernels the CPU's features allow, unless the caller names one.
OPENBLAS_CORE := $(shell grep -qw avx512f /proc/cpuinfo && echo SkylakeX || \
	{ grep -qw avx2 /proc/cpuinfo && echo Haswell; })

bench: module $(BENCH) $(RUN_TOOL) python-build
	@$(BENCH) compile
	@tools/bench/compile_onnx.sh $(BUILD)
	@PYTHONPATH=$(BUILD)/python $(PYTHON) tools/bench/python_overhead.py host
	@OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=$${OPENBLAS_CORETYPE:-$(OPENBLAS_CORE)} \
		$(BENCH) exec
	@tools/bench/models.sh $(BUILD)
	@zoo=$$(tools/zoo/models.sh $(BUILD)) && PYTHONPATH=$(BUILD)/python \
		$(PYTHON) tools/bench/cores_paired.py "$$zoo"
	@VTPU_BACKEND=host $(BENCH) runtime
	@tools/vm/run.sh --no-slab-debug --build $(BUILD) \
		--module $(CURDIR)/$(MODULE) \
		--params "$(VM_PARAMS)" --timeout 900 -- sh -c \
		'export OPENBLAS_NUM_THREADS=1; $(BENCH) submit && \
		 VTPU_BACKEND=accel $(BENCH) runtime'

# The model benchmark alone: make bench-models [MODELS="resnet18 mlp"]
bench-models: $(RUN_TOOL)
	@tools/bench/models.sh $(BUILD) $(MODELS)

# The config file records what tools/deps.sh resolved; make remakes it
# (installing what is missing) when it is absent or the script changed.
# Not for the userspace goals: make would remake it for -include too.
ifndef USERSPACE_ONLY
$(BUILD)/config.mk: tools/deps.sh
	@tools/deps.sh $(BUILD)
endif

deps:
	@tools/deps.sh $(BUILD)

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/driver CONFIG_DRM_ACCEL_VTPU=m \
		KCFLAGS="-Werror" W=1 modules

# The runtime's tests once more under ThreadSanitizer, which wants every
# object instrumented: built from the sources, not from the libraries.
TSAN_BIN := $(BUILD)/tests/unit/rt_api_tsan

tests: $(KSFT_BINS) $(UNIT_BINS) $(E2E_BINS) $(EXAMPLE) $(TSAN_BIN)

$(TSAN_BIN): tests/unit/rt_api.c $(RT_SRCS) $(CC_SRCS) $(EXEC_SRCS) $(ONNX_GEN) \
		$(BUILD_ID_H) \
		$(RT_HDRS) $(CC_HDRS) $(EXEC_HDRS) $(TEST_HDRS)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -O1 -fsanitize=thread -ffp-contract=off \
		-Idriver -Itests/common -Icompiler/include \
		-Icompiler -Iruntime -Iruntime/include -isystem $(KSFT_DIR) \
		-I$(GEN) -o $@ $< $(RT_SRCS) $(CC_SRCS) $(GEN)/onnx.pb-c.c \
		$(EXEC_SRCS) $(RT_LIBS)

$(BUILD)/tests/e2e/%: tests/e2e/%.c $(TEST_HDRS) $(LIBVTPU)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -Iruntime/include -Icompiler/include -Itests/common \
		-isystem $(KSFT_DIR) -o $@ $< $(LIBVTPU) $(RT_LIBS)

$(BUILD)/include/vtpu/vtpu.h: runtime/include/vtpu.h compiler/include/vtpu_compiler.h
	@mkdir -p $(@D)
	cp runtime/include/vtpu.h compiler/include/vtpu_compiler.h $(@D)/

# $(call readme_example,NAME): the code block after <!-- example: NAME -->.
readme_example = @mkdir -p $(@D); \
	awk '$$0 == "<!-- example: $1 -->" { on = 1; next } \
	     on && /^```[a-z]/ { next } on && /^```/ { exit } on { print }' \
	     $< > $@; \
	test -s $@ || { echo "README.md lost its $1 example"; exit 1; }

$(BUILD)/examples/readme_mlp.c: README.md
	$(call readme_example,mlp)

$(BUILD)/examples/readme_python.py: README.md
	$(call readme_example,python)

# Built as an application would: installed header, shared library.
$(EXAMPLE): $(BUILD)/examples/readme_mlp.c $(BUILD)/include/vtpu/vtpu.h $(LIBVTPU_SO)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -I$(BUILD)/include -o $@ $< \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lvtpu

EXEC_ISA_avx2 := -mavx2 -mfma
EXEC_ISA_avx512 := -mavx512f
exec_isa = $(EXEC_ISA_$(patsubst vtpu_exec_%,%,$(basename $(notdir $1))))

# The ISA builds include vtpu_exec.c.
$(foreach d,obj obj-san,$(foreach i,avx2 avx512, \
	$(eval $(BUILD)/$d/vtpu_exec_$i.o: driver/vtpu_exec.c)))

$(BUILD)/obj/%.o: driver/%.c $(EXEC_HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(EXEC_CFLAGS) $(call exec_isa,$@) -c -o $@ $<

$(BUILD)/obj-san/%.o: driver/%.c $(EXEC_HDRS) Makefile
	@mkdir -p $(@D)
	$(CC) $(EXEC_CFLAGS) $(call exec_isa,$@) $(SAN) -c -o $@ $<

$(BUILD)/obj/rt/%.o: runtime/%.c $(RT_HDRS) $(CC_HDRS) $(EXEC_HDRS) uapi/drm/vtpu_accel.h Makefile \
		| $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) $(RT_CFLAGS) -c -o $@ $<

$(BUILD)/obj-san/rt/%.o: runtime/%.c $(RT_HDRS) $(CC_HDRS) $(EXEC_HDRS) uapi/drm/vtpu_accel.h Makefile \
		| $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) $(RT_CFLAGS) $(SAN) -c -o $@ $<

$(LIBVTPU): $(RT_OBJS) $(CC_OBJS) $(EXEC_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(LIBVTPU_SAN): $(RT_SAN_OBJS) $(CC_SAN_OBJS) $(EXEC_SAN_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(LIBVTPU_PUB): $(RT_OBJS) $(CC_OBJS) $(EXEC_OBJS) runtime/libvtpu.map \
		tools/public-symbols.sh
	@mkdir -p $(@D)
	ld -r -o $(@D)/libvtpu-all.o $(RT_OBJS) $(CC_OBJS) $(EXEC_OBJS)
	tools/public-symbols.sh runtime/libvtpu.map $(@D)/libvtpu-all.o > $(@D)/symbols
	objcopy --keep-global-symbols=$(@D)/symbols $(@D)/libvtpu-all.o $(@D)/libvtpu.o
	rm -f $@ && ar rcs $@ $(@D)/libvtpu.o

$(LIBVTPU_SO): $(RT_OBJS) $(CC_OBJS) $(EXEC_OBJS) runtime/libvtpu.map
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libvtpu.so.0 \
		-Wl,--version-script=runtime/libvtpu.map -Wl,--no-undefined \
		-o $@ $(RT_OBJS) $(CC_OBJS) $(EXEC_OBJS) $(RT_LIBS)
	ln -sf libvtpu.so.0.1 $(BUILD)/lib/libvtpu.so.0
	ln -sf libvtpu.so.0.1 $(BUILD)/lib/libvtpu.so

# make install [PREFIX=/usr/local] [LIBDIR=...] [MANDIR=...] [DESTDIR=...]
# LIBDIR takes a multiarch directory (/usr/lib/x86_64-linux-gnu), as the
# Debian packages do. `make uninstall` with the same variables undoes it.
UAPI_HDRS := uapi/drm/vtpu_accel.h uapi/drm/vtpu_isa.h uapi/drm/vtpu_isa_ops.h
TOOLS := $(RUN_TOOL) $(COMPILE_TOOL) $(SMI_TOOL)
install: userspace
	install -d $(DESTDIR)$(INCLUDEDIR)/vtpu/drm $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(BINDIR) $(DESTDIR)$(PY_SITE)/vtpu
	install -m 644 runtime/include/vtpu.h compiler/include/vtpu_compiler.h \
		$(DESTDIR)$(INCLUDEDIR)/vtpu/
	install -m 644 $(UAPI_HDRS) $(DESTDIR)$(INCLUDEDIR)/vtpu/drm/
	install -m 644 $(LIBVTPU_PUB) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIBVTPU_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libvtpu.so.0.1 $(DESTDIR)$(LIBDIR)/libvtpu.so.0
	ln -sf libvtpu.so.0.1 $(DESTDIR)$(LIBDIR)/libvtpu.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' runtime/vtpu.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/vtpu.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/vtpu.pc
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	for m in $(MAN_PAGES); do \
		sec=$${m##*.}; install -d $(DESTDIR)$(MANDIR)/man$$sec && \
		install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$sec/ || exit 1; \
	done
	install -m 644 $(patsubst runtime/python/vtpu/%,$(PY_DIR)/%,$(PY_FILES)) \
		$(DESTDIR)$(PY_SITE)/vtpu/
	install -m 644 $(PY_EXT) $(DESTDIR)$(PY_SITE)/vtpu/
	install -d $(DESTDIR)$(DOCDIR)
	install -m 644 $(LICENSE_FILES) $(DESTDIR)$(DOCDIR)/

.PHONY: uninstall
uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/vtpu/,vtpu.h vtpu_compiler.h) \
		$(addprefix $(DESTDIR)$(INCLUDEDIR)/vtpu/drm/,$(notdir $(UAPI_HDRS))) \
		$(addprefix $(DESTDIR)$(LIBDIR)/,libvtpu.a libvtpu.so libvtpu.so.0 \
			libvtpu.so.0.1 pkgconfig/vtpu.pc) \
		$(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(TOOLS)))
	for m in $(MAN_PAGES); do \
		rm -f $(DESTDIR)$(MANDIR)/man$${m##*.}/$$(basename $$m); done
	rm -rf $(DESTDIR)$(PY_SITE)/vtpu
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(LICENSE_FILES)))
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null
	-rmdir $(DESTDIR)$(INCLUDEDIR)/vtpu/drm $(DESTDIR)$(INCLUDEDIR)/vtpu 2>/dev/null

# Debian packages (debian/): vtpu-dkms, libvtpu0, libvtpu-dev, vtpu-tools,
# python3-vtpu, in BUILD/deb. dpkg-buildpackage writes to the parent
# directory; the files listed in debian/files are moved from there.
.PHONY: deb
deb:
	dpkg-buildpackage -us -uc -b
	@mkdir -p $(BUILD)/deb
	@awk '{ print $$1 }' debian/files | while read -r f; do \
		mv ../$$f $(BUILD)/deb/ || exit 1; done
	@mv ../vtpu_*.changes ../vtpu_*.buildinfo $(BUILD)/deb/ 2>/dev/null; true
	@debian/rules clean >/dev/null 2>&1; true
	@ls -l $(BUILD)/deb

$(ONNX_GEN) &: $(ONNX_PROTO)
	@mkdir -p $(GEN)
	protoc-c --c_out=$(GEN) -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)

$(BUILD_ID_H): $(CC_SRCS) $(CC_HDRS) uapi/drm/vtpu_isa.h uapi/drm/vtpu_isa_ops.h
	@mkdir -p $(GEN)
	@printf '#define VTPU_COMPILER_BUILD "%s"\n' \
		"$$(cat $^ | sha256sum | cut -c1-16)" > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/cc/cache.o $(BUILD)/obj-san/cc/cache.o: $(BUILD_ID_H)

$(BUILD)/obj/cc/%.o: compiler/%.c $(CC_HDRS) $(EXEC_HDRS) Makefile | $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) $(CC_CFLAGS) -c -o $@ $<

$(BUILD)/obj-san/cc/%.o: compiler/%.c $(CC_HDRS) $(EXEC_HDRS) Makefile | $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) $(CC_CFLAGS) $(SAN) -c -o $@ $<

# Generated code: our warnings are not its business.
$(BUILD)/obj/cc/onnx.pb-c.o: $(GEN)/onnx.pb-c.c $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(CFLAGS) -fPIC -I$(GEN) -c -o $@ $<

$(BUILD)/obj-san/cc/onnx.pb-c.o: $(GEN)/onnx.pb-c.c $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(CFLAGS) -fPIC $(SAN) -I$(GEN) -c -o $@ $<

$(BUILD)/tests/kselftest/%: tests/kselftest/%.c $(KSFT_HDRS) $(TEST_HDRS) \
		uapi/drm/vtpu_accel.h $(LIBVTPU)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -Idriver -Iruntime -Itests/common \
		-Iruntime/include -Icompiler/include -Icompiler \
		-isystem $(KSFT_DIR) -o $@ $< $(LIBVTPU) $(RT_LIBS)

# tests/common/leak_check.c makes a test that leaks fail, although the
# harness's children _exit() past LeakSanitizer, and counts sysconf().
$(BUILD)/tests/unit/%: tests/unit/%.c $(TEST_HDRS) uapi/drm/vtpu_accel.h \
		tests/common/leak_check.c $(LIBVTPU_SAN) | $(ONNX_GEN)
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(SAN) -Idriver -Itests/common \
		-Icompiler/include -Icompiler -Iruntime -Iruntime/include -I$(GEN) \
		-isystem $(KSFT_DIR) -Wl,--wrap=_exit -Wl,--wrap=sysconf -o $@ $< \
		tests/common/leak_check.c $(LIBVTPU_SAN) $(RT_LIBS)

# Each suite prints "<suite>: N passed, N failed, N skipped".
checkpatch:
	@tools/checkpatch.sh $(CHECKPATCH)

e2e: module $(E2E_BINS) $(EXAMPLE)
	@tools/e2e.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)"

unit: $(UNIT_BINS)
	@tools/run-unit.sh $(BUILD)/tests/unit

# The command-line tools as a user runs them, make install, and the
# Debian packages installed on this machine (tests/tools/*.sh).
.PHONY: tools-test
tools-test: userspace $(BUILD)/examples/readme_mlp.c deb
	@tools/tools-test.sh $(BUILD)

kselftest: module $(KSFT_BINS)
	@tools/kselftest.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)" $(T)

# Not part of check: the debug kernel takes ~25 min to build once (cached
# outside BUILD), the run ~N min. vtpu.ko is built in BUILD/debug/src.
.PHONY: check-debug
check-debug: $(KSFT_BINS) $(SMI_TOOL)
	@tools/check-debug.sh $(BUILD) "$(VM_PARAMS)" $(DEBUG_FUZZ_SECONDS)

check:
	@tools/check.sh

vm-shell: module
	@tools/vm/shell.sh --build $(BUILD) --module $(CURDIR)/$(MODULE) \
		--params "$(VM_PARAMS)"

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/driver clean
	rm -rf $(BUILD)/tests $(BUILD)/vm $(BUILD)/logs $(BUILD)/obj \
		$(BUILD)/obj-san $(BUILD)/lib $(BUILD)/bin $(BUILD)/gen \
		$(BUILD)/include $(BUILD)/examples $(BUILD)/e2e $(BUILD)/demo \
		$(BUILD)/conformance $(BUILD)/python
