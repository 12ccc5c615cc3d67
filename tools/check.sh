#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make check`: install what is missing, build everything with -Werror,
# then run each suite. Every suite prints "<suite>: N passed, N failed,
# N skipped"; this script repeats those lines at the end and closes with
# the total line. Exits nonzero on any failure.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${BUILD:-$top/build}
logs=$build/logs
start=$(date +%s)

tools/deps.sh "$build" || { echo "check: tools/deps.sh failed"; exit 1; }
mkdir -p "$logs"

if ! make -s BUILD="$build" all > "$logs/build.log" 2>&1; then
	cat "$logs/build.log"
	echo "build: 0 passed, 1 failed, 0 skipped"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi

suites=(checkpatch unit tools kselftest fuzz-kernel e2e conformance hlo zoo python)
# The make target of a suite whose name is not its target.
declare -A target=([conformance]=conformance-check [tools]=tools-test)
summary=()
tp=0 tf=0 ts=0
for s in "${suites[@]}"; do
	echo "=== $s"
	make -s --no-print-directory BUILD="$build" "${target[$s]:-$s}" 2>&1 |
		tee "$logs/$s.log"
	rc=${PIPESTATUS[0]}
	line=$(grep -E "^$s: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$" \
		"$logs/$s.log" | tail -1)
	read -r p f k < <(echo "$line" |
		sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/')
	p=${p:-0} f=${f:-0} k=${k:-0}
	# A suite that failed without counting a failure (the VM crashed,
	# dmesg showed a WARNING, the runner died) still failed.
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
		echo "check: $s exited with status $rc"
	fi
	summary+=("$s: $p passed, $f failed, $k skipped")
	tp=$((tp + p)) tf=$((tf + f)) ts=$((ts + k))
done

echo "=== summary ($(($(date +%s) - start)) s)"
printf '%s\n' "${summary[@]}"
echo "$tp passed, $tf failed, $ts skipped"
[ "$tf" = 0 ]
