#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The conformance suite: ONNX's backend test data (Debian's
# libonnx-testdata) through the ONNX frontend, the compiler and libvtpu,
# first on the host backend here, then on the accel backend in QEMU with
# vtpu.ko loaded. Both runs take the expected failures from
# tests/conformance/xfail; the host run records every test's verdict and
# a hash of its outputs, and the accel run must reproduce them bit for
# bit (a disagreement is a DIFFER line, a failure).
# Prints "conformance-host: ...", "conformance-accel: ..." and then
# "conformance: N passed, N failed, N skipped", their sum.
# Usage: tools/conformance.sh BUILD MODULE "PARAMS"
set -uo pipefail
build=$1 module=$2 params=$3
top=$(cd "$(dirname "$0")/.." && pwd)
data=/usr/share/libonnx-testdata/data
bin=$build/bin/vtpu-conformance
xfail=$top/tests/conformance/xfail
out=$build/conformance
ref=$out/host.rec
mkdir -p "$out"
rm -f "$ref"

total_p=0 total_f=0 total_s=0
count() {	# sums a suite line of the runner into the totals
	local line
	line=$(grep -E "^$1: [0-9]+ passed" "$2" | tail -1)
	[[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] || {
		echo "conformance: $1 printed no summary"; total_f=$((total_f + 1)); return; }
	total_p=$((total_p + BASH_REMATCH[1]))
	total_f=$((total_f + BASH_REMATCH[2]))
	total_s=$((total_s + BASH_REMATCH[3]))
}

# Host backend, on the host: records what the accel run must reproduce.
start=$(date +%s)
VTPU_BACKEND=host "$bin" --suite conformance-host --xfail "$xfail" \
	--record "$ref" "$data" 2>&1 | tee "$out/host.log"
count conformance-host "$out/host.log"
[ -s "$ref" ] || { echo "conformance: the host run wrote no $ref"; total_f=$((total_f + 1)); }
echo "conformance: host run took $(($(date +%s) - start)) s"

# Accel backend, in the VM, against the host's record. Under TCG a test
# takes tens of times longer than on the host; the per-test timeout
# grows to match.
start=$(date +%s)
"$top/tools/vm/run.sh" --build "$build" --module "$module" --params "$params" \
	--timeout 900 -- sh -c "VTPU_BACKEND=accel $bin --suite conformance-accel \
--timeout 120 --xfail $xfail --check $ref $data" 2>&1 | tee "$out/accel.log"
vm=${PIPESTATUS[0]}
count conformance-accel "$out/accel.log"
echo "conformance: accel run (VM) took $(($(date +%s) - start)) s"
# The runner's own failures are counted; a VM that failed otherwise
# (splat in dmesg, timeout, module trouble) is one more.
if [ "$vm" != 0 ] && ! grep -qE '^conformance-accel: [0-9]+ passed, [1-9]' "$out/accel.log"; then
	total_f=$((total_f + 1))
	echo "conformance: the VM run failed (status $vm)"
fi
echo "conformance: $total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" = 0 ]
