#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The e2e suite: the runtime conformance suite and the README's example,
# first on the host backend here, then on the accel backend in QEMU with
# vtpu.ko loaded. The accel run must reproduce the host run's outputs bit
# for bit (the host run records their hashes, the guest checks them).
# Prints "e2e: N passed, N failed, N skipped".
# Usage: tools/e2e.sh BUILD MODULE "PARAMS"
set -uo pipefail
build=$1 module=$2 params=$3
top=$(cd "$(dirname "$0")/.." && pwd)
ref=$build/e2e/host.ref
mkdir -p "$build/e2e"
rm -f "$ref"

total_p=0 total_f=0 total_s=0
count() {	# sums a run.sh summary line into the totals
	local line
	line=$(grep -E "^$1: [0-9]+ passed" "$2" | tail -1)
	[[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] || {
		echo "e2e: $1 printed no summary"; total_f=$((total_f + 1)); return; }
	total_p=$((total_p + BASH_REMATCH[1]))
	total_f=$((total_f + BASH_REMATCH[2]))
	total_s=$((total_s + BASH_REMATCH[3]))
}

example() {	# the README example must run and say which backend ran it
	local out
	if out=$("$build/examples/readme_mlp" 2>&1) && [[ $out == "$1:"* ]]; then
		echo "ok: readme example on $1: $out"
		echo "$out" > "$build/e2e/example.$1"
	else
		echo "not ok: readme example on $1: $out"
		return 1
	fi
}

# Host backend, on the host: the conformance suite (the other e2e
# binaries test the accel backend and belong in the VM).
VTPU_BACKEND=host VTPU_CONFORMANCE_BACKEND=host VTPU_CONFORMANCE_WRITE=$ref \
	"$top/tests/kselftest/run.sh" --suite e2e-host "$build/tests/e2e" \
	conformance 2>&1 | tee "$build/e2e/host.log"
count e2e-host "$build/e2e/host.log"
if VTPU_BACKEND=host example host; then total_p=$((total_p + 1)); else total_f=$((total_f + 1)); fi

# Accel backend, in the VM, against the host's hashes.
"$top/tools/vm/run.sh" --build "$build" --module "$module" --params "$params" \
	--timeout 900 -- sh -c "VTPU_BACKEND=accel VTPU_CONFORMANCE_BACKEND=accel \
VTPU_CONFORMANCE_REF=$ref $top/tests/kselftest/run.sh --suite e2e-accel $build/tests/e2e && \
out=\$(VTPU_BACKEND=accel $build/examples/readme_mlp) && echo \"ok: readme example: \$out\" && \
[ \"\${out#accel:}\" = \"\$(cut -d: -f2- $build/e2e/example.host)\" ] && echo 'ok: same numbers as the host backend'" \
	2>&1 | tee "$build/e2e/accel.log"
vm=${PIPESTATUS[0]}
count e2e-accel "$build/e2e/accel.log"
if grep -q '^ok: same numbers as the host backend' "$build/e2e/accel.log"; then
	total_p=$((total_p + 1))
else
	echo "e2e: the README example on accel did not match the host backend"
	total_f=$((total_f + 1))
fi
if [ "$vm" != 0 ] && [ "$total_f" = 0 ]; then
	total_f=1
	echo "e2e: the VM run failed (status $vm)"
fi
echo "e2e: $total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
