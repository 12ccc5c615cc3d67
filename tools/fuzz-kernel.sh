#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boot the VM with vtpu.ko loaded with PARAMS and run the uAPI fuzzer,
# vtpu-kfuzz, for SECONDS. Extra arguments go to tools/vm/run.sh as they
# are (--kernel IMAGE, --allow-dmesg RE, ...). The fuzzer counts the same
# kernel messages as run.sh (its DMESG_BAD list, minus --allow-dmesg),
# checks that nothing is left once it has closed everything, and that
# vtpu.ko cannot be unloaded while a sync_file holds one of its fences;
# run.sh then fails the run on any splat or an unclean unload.
#
# SEED=N replays a run (the seed is printed first); KFUZZ_ARGS adds
# fuzzer options, e.g. "--failslab 5" or "--no fork,uring". The list of
# operations goes to kfuzz-ops.log in the results directory, which
# run.sh keeps when the run fails.
#
# Prints the fuzzer's "fuzz-kernel: N ops, N jobs, N splats", then
# "fuzz-kernel: N passed, N failed, N skipped".
# Usage: tools/fuzz-kernel.sh BUILD MODULE "PARAMS" SECONDS [run.sh options...]
set -uo pipefail
[ $# -ge 4 ] || { sed -n 's/^# Usage: /usage: /p' "$0" >&2; exit 2; }
build=$1 module=$2 params=$3 secs=$4
shift 4
top=$(cd "$(dirname "$0")/.." && pwd)
fuzzer=$build/bin/vtpu-kfuzz
[ -x "$fuzzer" ] || { echo "fuzz-kernel: $fuzzer not built" >&2; exit 2; }
[[ $secs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz-kernel: SECONDS must be whole seconds, not '$secs'" >&2; exit 2; }

seed=${SEED:-}
[ -n "$seed" ] || seed=$(( $(date +%s%N) % 1000000007 ))
echo "fuzz-kernel: seed $seed, $secs s (replay: make fuzz-kernel SEED=$seed SECONDS=$secs)"

# One list of bad kernel messages: run.sh's, and what the caller allows.
bad=$(sed -n "/^DMESG_BAD=(/,/^)/s/^[[:space:]]*'\(.*\)'[[:space:]]*$/\1/p" \
	"$top/tools/vm/run.sh" | paste -sd '|')
[ -n "$bad" ] || { echo "fuzz-kernel: no DMESG_BAD in tools/vm/run.sh" >&2; exit 2; }
allow=
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	if [ "${args[i]}" = --allow-dmesg ] && [ $((i + 1)) -lt ${#args[@]} ]; then
		allow+=${allow:+|}${args[i + 1]}
	fi
done
modname=$(modinfo -F name "$module" 2>/dev/null) || true
[ -n "$modname" ] || modname=vtpu

mkdir -p "$build/logs"
log=$build/logs/fuzz-kernel.run.log
# The end of a run waits for the device to go idle (up to 120 s) and the
# boot takes a few: the VM timeout leaves room for both.
# shellcheck disable=SC2016,SC2086 # expanded in the guest; KFUZZ_ARGS splits
"$top/tools/vm/run.sh" --build "$build" --module "$module" --params "$params" \
	--timeout $((secs + 300)) "$@" -- \
	env KFUZZ_DMESG_BAD="$bad" KFUZZ_DMESG_ALLOW="$allow" \
	bash -c 'exec "$0" "$@" --log "$VTPU_RESULTS/kfuzz-ops.log"' \
	"$fuzzer" --seed "$seed" --seconds "$secs" --unload "$modname" \
	${KFUZZ_ARGS:-} 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

if [ "$rc" = 0 ] && grep -qE '^fuzz-kernel: [0-9]+ ops, [0-9]+ jobs, 0 splats$' "$log"; then
	echo "fuzz-kernel: 1 passed, 0 failed, 0 skipped"
	exit 0
fi
grep -qE '^fuzz-kernel: [0-9]+ ops' "$log" ||
	echo "fuzz-kernel: the fuzzer did not finish (exit $rc)"
echo "fuzz-kernel: FAILED with seed $seed: replay with make fuzz-kernel SEED=$seed SECONDS=$secs"
echo "fuzz-kernel: 0 passed, 1 failed, 0 skipped"
exit 1
