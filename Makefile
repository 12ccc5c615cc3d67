# SPDX-License-Identifier: GPL-2.0-only
#
# vtpu top-level build.
#
#   make            build vtpu.ko and the userspace tests
#   make check      install what is missing, build, checkpatch, unit tests,
#                   kselftests in QEMU; one summary line per suite
#   make kselftest [T=<binary>]   kselftests in QEMU (all, or one binary)
#   make vm-shell   interactive QEMU guest with vtpu.ko loaded
#   make clean
#
# KDIR=<kernel build dir> builds against another tree (default: the
# Debian 6.12 headers tools/deps.sh installs). V=1 for verbose kbuild.

BUILD ?= $(CURDIR)/build
include $(BUILD)/config.mk

KDIR ?= $(DEPS_KDIR)
MODULE := driver/vtpu.ko

# What the kselftests expect (they read it back from the environment).
VM_PARAMS ?= num_devices=2 num_cores=2 hbm_mib=32 vmem_kib=1024

CC ?= gcc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror
USER_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -Iuapi \
	$(shell pkg-config --cflags libdrm)
USER_LIBS := $(shell pkg-config --libs libdrm)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=all

KSFT_SRCS := $(wildcard tests/kselftest/*.c)
KSFT_BINS := $(patsubst tests/kselftest/%.c,$(BUILD)/tests/kselftest/%,$(KSFT_SRCS))
KSFT_HDRS := $(wildcard tests/kselftest/*.h)
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))

.PHONY: all module tests clean check checkpatch unit kselftest vm-shell deps

all: module tests

# The config file records what tools/deps.sh resolved; make remakes it
# (installing what is missing) when it is absent or the script changed.
$(BUILD)/config.mk: tools/deps.sh
	@tools/deps.sh $(BUILD)

deps:
	@tools/deps.sh $(BUILD)

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/driver CONFIG_DRM_ACCEL_VTPU=m \
		KCFLAGS="-Werror" W=1 modules

tests: $(KSFT_BINS) $(UNIT_BINS)

$(BUILD)/tests/kselftest/%: tests/kselftest/%.c $(KSFT_HDRS) uapi/drm/vtpu_accel.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) -isystem $(KSFT_DIR) -o $@ $< $(USER_LIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c uapi/drm/vtpu_accel.h
	@mkdir -p $(@D)
	$(CC) $(USER_CFLAGS) $(SAN) -isystem $(KSFT_DIR) -o $@ $< $(USER_LIBS)

# Each suite prints "<suite>: N passed, N failed, N skipped".
checkpatch:
	@tools/checkpatch.sh $(CHECKPATCH)

unit: $(UNIT_BINS)
	@tools/run-unit.sh $(BUILD)/tests/unit

kselftest: module $(KSFT_BINS)
	@tools/kselftest.sh $(BUILD) $(CURDIR)/$(MODULE) "$(VM_PARAMS)" $(T)

check:
	@tools/check.sh

vm-shell: module
	@tools/vm/shell.sh --build $(BUILD) --module $(CURDIR)/$(MODULE) \
		--params "$(VM_PARAMS)"

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/driver clean
	rm -rf $(BUILD)/tests $(BUILD)/vm $(BUILD)/logs
