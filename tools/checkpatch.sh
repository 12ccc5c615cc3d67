#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# checkpatch.pl --strict over every kernel-side file (driver/, uapi/,
# Kconfig). Any ERROR, WARNING or CHECK fails the file.
# Usage: tools/checkpatch.sh PATH/TO/checkpatch.pl
set -uo pipefail
cp=${1:?usage: checkpatch.sh CHECKPATCH}
cd "$(dirname "$0")/.."

files=$(git ls-files -co --exclude-standard -- 'driver/*.[ch]' 'driver/Kbuild' \
	'uapi/*.h' Kconfig | grep -v '\.mod\.c$' | sort -u)
pass=0 fail=0
for f in $files; do
	out=$(perl "$cp" --no-tree --strict --terse --show-types -f "$f" 2>&1 |
	      grep -E '(ERROR|WARNING|CHECK):')
	if [ -n "$out" ]; then
		echo "$out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
done
echo "checkpatch: $pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
