#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run every host unit-test binary in a directory (kselftest_harness
# programs, built with ASan/UBSan) and sum their results.
# Usage: tools/run-unit.sh DIR
set -uo pipefail
dir=${1:?usage: run-unit.sh DIR}
exec "$(dirname "$0")/../tests/kselftest/run.sh" --suite unit "$dir"
