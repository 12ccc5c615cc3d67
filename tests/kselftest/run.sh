#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run every kselftest_harness binary in DIR (or only BINARY), pass their
# KTAP output through, and end with one line
#   <suite>: N passed, N failed, N skipped
# summed from the "# Totals:" line each harness prints: xfail counts as
# passed; fail, error and xpass (a stale expectation) as failed. A binary
# that prints no Totals, dies of a signal, times out or exits with a
# status its Totals do not explain counts as one more failure.
# An empty DIR counts as a failure too. Binaries named *_final run last:
# they check what the others left behind. Exits nonzero on any failure.
#
# Usage: run.sh [--suite NAME] [--timeout SECS] DIR [BINARY]
set -uo pipefail

suite=kselftest
per_binary_timeout=600

usage() {
	echo "usage: run.sh [--suite NAME] [--timeout SECS] DIR [BINARY]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--suite) suite=${2:?}; shift 2 ;;
	--timeout) per_binary_timeout=${2:?}; shift 2 ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	usage
fi
dir=$1 one=${2:-}
[ -d "$dir" ] || { echo "run.sh: $dir is not a directory" >&2; exit 2; }

bins=()
if [ -n "$one" ]; then
	bins=("$dir/${one##*/}")
	[ -x "${bins[0]}" ] || { echo "run.sh: no test binary ${bins[0]}" >&2; exit 2; }
else
	last=()
	for f in "$dir"/*; do
		if [ ! -f "$f" ] || [ ! -x "$f" ]; then
			continue
		fi
		case ${f##*/} in
		*.sh | *.o | *.d | *.so) continue ;;
		*_final) last+=("$f") ;;
		*) bins+=("$f") ;;
		esac
	done
	bins+=(${last[@]+"${last[@]}"})
fi

log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT

passed=0 failed=0 skipped=0
for bin in ${bins[@]+"${bins[@]}"}; do
	name=${bin##*/}
	echo "# run.sh: $name"
	# stderr too: TH_LOG() diagnostics belong next to the result lines.
	timeout -k 10 "$per_binary_timeout" "$bin" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}

	# No process substitution: the guest has no /dev/fd.
	re='# Totals: pass:([0-9]+) fail:([0-9]+) xfail:([0-9]+) xpass:([0-9]+) skip:([0-9]+) error:([0-9]+)'
	totals=$(grep -Eo "$re" "$log" | tail -n 1)
	if ! [[ $totals =~ $re ]]; then
		echo "# run.sh: $name printed no Totals (exit status $rc): counted as failed"
		failed=$((failed + 1))
		continue
	fi
	p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]} xf=${BASH_REMATCH[3]}
	xp=${BASH_REMATCH[4]} s=${BASH_REMATCH[5]} e=${BASH_REMATCH[6]}
	passed=$((passed + p + xf))
	failed=$((failed + f + xp + e))
	skipped=$((skipped + s))

	case $rc in
	0) ;;
	1) if [ $((f + xp + e)) -eq 0 ]; then
		echo "# run.sh: $name failed without a failing test: counted as failed"
		failed=$((failed + 1))
	   fi ;;
	124 | 137) echo "# run.sh: $name timed out after ${per_binary_timeout}s: counted as failed"
	   failed=$((failed + 1)) ;;
	*) echo "# run.sh: $name exited with status $rc: counted as failed"
	   failed=$((failed + 1)) ;;
	esac
done

if [ ${#bins[@]} -eq 0 ]; then
	echo "# run.sh: no test binaries in $dir: counted as failed"
	failed=1
fi
echo "$suite: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
