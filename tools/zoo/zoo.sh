#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The zoo suite: real models exported by torch.onnx (tools/zoo/export.py)
# run with vtpu-run on the host backend and compared with PyTorch's
# outputs: the error, max|y - ref| / max|ref| over every output of every
# input set, must be at most 1e-3. Prints one line per model,
#   zoo/<model>: ok rel err E (opset N, M ms)
# and "zoo: N passed, N failed, N skipped". Models listed in
# tools/zoo/xfail are expected to fail (XFAIL, skipped); one that passes
# is XPASS, a failure: take it off the list.
#
# Then a few small models ($ZOO_ACCEL_MODELS, default "mlp lstm"; empty:
# none) run again on the accel backend in QEMU with vtpu.ko loaded, and
# their outputs must be the host run's, bit for bit:
#   zoo/<model>/accel: ok (the host's outputs, bit for bit)
#
# The exports come from tools/zoo/models.sh (cached in BUILD/zoo).
# Usage: tools/zoo/zoo.sh BUILD MODULE "PARAMS" [MODEL...]
set -uo pipefail
build=$1 module=$2 params=$3
shift 3
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$build/bin/vtpu-run
tol=1e-3
repeat=${ZOO_REPEAT:-3}

if ! models=$("$top/tools/zoo/models.sh" "$build"); then
	echo "zoo: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
out=$build/zoo/out
xfail=$top/tools/zoo/xfail
rm -rf "$out" && mkdir -p "$out"

pass=0 fail=0 skip=0
verdict() {	# MODEL ok|FAIL MESSAGE: counted, with the xfail list applied
	local m=$1 ok=$2 msg=$3 why
	why=$(awk -v m="$m" '$1 == m { $1 = ""; sub(/^ +/, ""); print }' "$xfail")
	if [ -n "$why" ] && [ "$ok" = ok ]; then
		echo "zoo/$m: XPASS $msg (listed in tools/zoo/xfail: take it off)"
		fail=$((fail + 1))
	elif [ -n "$why" ]; then
		echo "zoo/$m: XFAIL $msg"
		skip=$((skip + 1))
	elif [ "$ok" = ok ]; then
		echo "zoo/$m: ok $msg"
		pass=$((pass + 1))
	else
		echo "zoo/$m: FAIL $msg"
		fail=$((fail + 1))
	fi
}

check() {	# MODEL: every input set of it, one verdict line
	local m=$1 d=$models/$1 worst=0 ms= opset set args log line e t
	opset=$(sed -n 's/^opset //p' "$d/info")
	for set in "$d"/test_data_set_*; do
		args=()
		for f in "$set"/input_*.npy; do args+=(-i "$f"); done
		for f in "$set"/output_*.npy; do args+=(-e "$f"); done
		log=$out/$m.$(basename "$set").log
		mkdir -p "$out/$m/$(basename "$set")"
		"$run" -b host -q -n "$repeat" -o "$out/$m/$(basename "$set")" \
			"${args[@]}" "$d/model.onnx" > "$log" 2>&1
		# vtpu-run's own verdict is elementwise; ours is the error
		# relative to the largest reference value.
		line=$(grep -c ' of max|expected|' "$log")
		if [ "$line" != "$(ls "$set"/output_*.npy | wc -l)" ]; then
			verdict "$m" FAIL "($(basename "$set")): $(grep '^vtpu-run: ' "$log" |
				tail -1 | sed 's|^vtpu-run: [^:]*: ||')"
			return
		fi
		for e in $(sed -nE 's/.*, ([^ ]+) of max\|expected\|.*/\1/p' "$log"); do
			worst=$(awk -v a="$worst" -v b="$e" 'BEGIN { print (b > a || b != b) ? b : a }')
		done
		t=$(sed -nE 's/.*; run ([0-9.]+) ms.*/\1/p' "$log")
		ms=${ms:+$ms/}$t
	done
	if awk -v e="$worst" -v t="$tol" 'BEGIN { exit !(e <= t) }'; then
		verdict "$m" ok "rel err $worst (opset $opset, $ms ms)"
	else
		verdict "$m" FAIL "rel err $worst > $tol (opset $opset, $ms ms)"
	fi
}

start=$(date +%s)
chosen=$(echo ${*:-$(cat "$models/MANIFEST")})	# one line
for m in $chosen; do
	if [ ! -d "$models/$m" ]; then
		echo "zoo/$m: FAIL: no such model in $models"
		fail=$((fail + 1))
		continue
	fi
	check "$m"
done
echo "zoo: host run took $(($(date +%s) - start)) s"

# The accel backend in the VM: each model's first input set, its outputs
# saved beside the host's, then compared byte for byte.
accel=()
for m in ${ZOO_ACCEL_MODELS-mlp lstm}; do
	[[ " $chosen " == *" $m "* ]] && [ -d "$out/$m/test_data_set_0" ] &&
		accel+=("$m")
done
if [ ${#accel[@]} -gt 0 ]; then
	start=$(date +%s)
	res=$out/accel
	mkdir -p "$res"
	script=$out/accel.sh
	{
		echo "set -u; rc=0"
		for m in "${accel[@]}"; do
			args=
			for f in "$models/$m/test_data_set_0"/input_*.npy; do
				args="$args -i $f"
			done
			echo "mkdir -p $res/$m && $run -b accel -q$args -o $res/$m $models/$m/model.onnx > $res/$m.log 2>&1 || { echo \"zoo/$m/accel: vtpu-run failed:\"; tail -3 $res/$m.log; rc=1; }"
		done
		echo 'exit $rc'
	} > "$script"
	"$top/tools/vm/run.sh" --build "$build" --module "$module" \
		--params "$params" --results "$res" --timeout 600 -- sh "$script" \
		> "$out/vm.log" 2>&1
	vm=$?
	for m in "${accel[@]}"; do
		host_out=$(ls "$out/$m/test_data_set_0"/output_*.npy 2>/dev/null)
		bad=
		for f in $host_out; do
			cmp -s "$f" "$res/$m/$(basename "$f")" || bad="$bad $(basename "$f")"
		done
		if ! grep -q '^backend accel' "$res/$m.log" 2>/dev/null; then
			echo "zoo/$m/accel: FAIL: no accel run ($(tail -1 "$res/$m.log" 2>/dev/null))"
			fail=$((fail + 1))
		elif [ -n "$bad" ] || [ -z "$host_out" ]; then
			echo "zoo/$m/accel: FAIL: differs from the host run:${bad:- no outputs}"
			fail=$((fail + 1))
		else
			echo "zoo/$m/accel: ok (the host's outputs, bit for bit)"
			pass=$((pass + 1))
		fi
	done
	if [ "$vm" != 0 ]; then
		tail -5 "$out/vm.log"
		echo "zoo: the VM run failed (status $vm)"
		fail=$((fail + 1))
	fi
	echo "zoo: accel run (VM) took $(($(date +%s) - start)) s"
fi
echo "zoo: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
