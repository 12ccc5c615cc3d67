#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The tools suite: each tests/tools/*.sh drives the installed-style
# binaries in BUILD/bin (vtpu-run, vtpu-compile, vtpu-smi) as a user
# would, on the host backend, and prints one TAP line per check:
# "ok N - what" or "not ok N - what". Prints
# "tools: N passed, N failed, N skipped".
# Usage: tools/tools-test.sh BUILD
set -uo pipefail
build=${1:?usage: tools-test.sh BUILD}
top=$(cd "$(dirname "$0")/.." && pwd)
p=0 f=0 s=0
for t in "$top"/tests/tools/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	out=$(BUILD=$build TOP=$top bash "$t" "$build" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed "s/^/$name: /"
	tp=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+' || true)
	tf=$(printf '%s\n' "$out" | grep -cE '^not ok [0-9]+' || true)
	ts=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+ .*# SKIP' || true)
	tp=$((tp - ts))
	# a script that died without saying which check failed still failed
	if [ "$rc" != 0 ] && [ "$tf" = 0 ]; then
		echo "$name: exited with status $rc"
		tf=1
	fi
	p=$((p + tp)) f=$((f + tf)) s=$((s + ts))
done
echo "tools: $p passed, $f failed, $s skipped"
[ "$f" = 0 ]
