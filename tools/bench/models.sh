#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The model benchmark of `make bench`: every zoo model (tools/zoo/
# models.sh) on vtpu's host backend and on ONNX Runtime's CPU provider,
# measured in the same run, on the same inputs (the model's first input
# set). One figure a line:
#   model/<name>/vtpu-1c: MS ms       a device of one core
#   model/<name>/vtpu: MS ms          a device of two cores, the default
#   model/<name>/ort-1t: MS ms        ONNX Runtime, one thread
#   model/<name>/ort-2t: MS ms        ONNX Runtime, two threads
#   model/<name>/vtpu-1c-vs-ort-1t: R x
#   model/<name>/vtpu-vs-ort-2t: R x
# then the geometric means of those ratios over the models and
#   model/geomean/vtpu-2c-vs-1c: R x  (speed-up from the second core)
#   model/geomean/ort-2t-vs-1t: R x   (ONNX Runtime's from its second
#                                      thread, on the same machine)
# Each time is the median over BENCH_ROUNDS (3) interleaved rounds of a
# median of BENCH_RUNS (20) runs (vtpu-run -n, ort_bench.js). Ratios
# above 1 mean vtpu is slower.
#
# ONNX Runtime comes from npm's onnxruntime-node, installed here with
# --ignore-scripts into BUILD/ort for this benchmark only; without it the
# ONNX Runtime lines say why and the vtpu lines remain.
# Usage: tools/bench/models.sh BUILD [MODEL...]   (BENCH_RUNS=N, default 20)
set -uo pipefail
build=${1:?usage: tools/bench/models.sh BUILD [MODEL...]}
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$build/bin/vtpu-run
runs=${BENCH_RUNS:-20}
# Rounds per model: vtpu 1c, vtpu 2c, ORT 1t and 2t take turns, and each
# figure is the median of its rounds' medians, so that a burst of noise
# on these small VMs (a stolen core for a second) lands on one round of
# one side rather than on a whole figure.
rounds=${BENCH_ROUNDS:-3}
ort_version=1.30.0

models=$("$top/tools/zoo/models.sh" "$build") || exit 1

ort_dir=$build/ort
ort=
if [ -f "$ort_dir/node_modules/onnxruntime-node/package.json" ] &&
   grep -q "\"version\": \"$ort_version\"" \
	"$ort_dir/node_modules/onnxruntime-node/package.json"; then
	ort=1
elif ! command -v npm >/dev/null; then
	echo "model/ort: unavailable: no npm (install Debian's npm)"
elif mkdir -p "$ort_dir" && npm install --prefix "$ort_dir" --ignore-scripts \
	--no-audit --no-fund "onnxruntime-node@$ort_version" > "$ort_dir/npm.log" 2>&1; then
	ort=1
else
	echo "model/ort: unavailable: npm install onnxruntime-node failed ($ort_dir/npm.log)"
fi

# vtpu-1c is a device of one core (vtpu-run -c 1); vtpu the host
# backend's default device, two cores, for which the compiler splits big
# kernels into two lanes that the two cores run at once.
vtpu_ms() {	# DIR CORES: median ms of vtpu-run on the host backend
	local d=$1 args=() f
	for f in "$d"/test_data_set_0/input_*.npy; do args+=(-i "$f"); done
	"$run" -b host -c "$2" -q -n "$runs" "${args[@]}" \
		"$d/model.onnx" 2>&1 |
		sed -nE 's/.*; run ([0-9.]+) ms \(median.*/\1/p'
}

ort_ms() {	# DIR THREADS
	NODE_PATH=$ort_dir/node_modules node "$top/tools/bench/ort_bench.js" \
		"$1" "$2" "$runs" 2>&1 | sed -n 's/^median_ms //p'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

median() {	# VALUE...: their median, or nothing if one is missing
	local n=0 v
	for v in "$@"; do [ -n "$v" ] && n=$((n + 1)); done
	[ "$n" -eq "$#" ] && [ "$n" -gt 0 ] || return 0
	printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END {
		m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		printf "%s", m }'
}

logs=()	# "name ratio" for the geomeans
add() { logs+=("$1 $2"); }
for m in ${*:-$(cat "$models/MANIFEST")}; do
	d=$models/$m
	r1=() ra=() q1=() q2=()
	for ((i = 0; i < rounds; i++)); do
		r1+=("$(vtpu_ms "$d" 1)")
		ra+=("$(vtpu_ms "$d" 2)")
		if [ -n "$ort" ]; then
			q1+=("$(ort_ms "$d" 1)")
			q2+=("$(ort_ms "$d" 2)")
		fi
	done
	v1=$(median "${r1[@]}")
	va=$(median "${ra[@]}")
	if [ -z "$v1" ] || [ -z "$va" ]; then
		echo "model/$m/vtpu: FAIL (vtpu-run did not run it)"
		continue
	fi
	echo "model/$m/vtpu-1c: $v1 ms"
	echo "model/$m/vtpu: $va ms"
	add 2c-vs-1c "$(ratio "$v1" "$va")"
	[ -n "$ort" ] || continue
	o1=$(median "${q1[@]}")
	o2=$(median "${q2[@]}")
	if [ -z "$o1" ] || [ -z "$o2" ]; then
		echo "model/$m/ort: FAIL (ONNX Runtime did not run it)"
		continue
	fi
	echo "model/$m/ort-1t: $o1 ms"
	echo "model/$m/ort-2t: $o2 ms"
	r1=$(ratio "$v1" "$o1") r2=$(ratio "$va" "$o2")
	echo "model/$m/vtpu-1c-vs-ort-1t: $r1 x"
	echo "model/$m/vtpu-vs-ort-2t: $r2 x"
	add 1c-vs-1t "$r1"
	add all-vs-2t "$r2"
	add ort-2t-vs-1t "$(ratio "$o1" "$o2")"
done

geomean() {	# KIND
	printf '%s\n' "${logs[@]}" | awk -v k="$1" '$1 == k { s += log($2); n++ }
		END { if (n) printf "%.3f", exp(s / n) }'
}
g=$(geomean 1c-vs-1t) && [ -n "$g" ] && echo "model/geomean/vtpu-1c-vs-ort-1t: $g x"
g=$(geomean all-vs-2t) && [ -n "$g" ] && echo "model/geomean/vtpu-vs-ort-2t: $g x"
g=$(geomean 2c-vs-1c) && [ -n "$g" ] && echo "model/geomean/vtpu-2c-vs-1c: $g x"
# What a second thread gives ONNX Runtime on the same machine, same run:
# the scale against which vtpu's second core is judged.
g=$(geomean ort-2t-vs-1t) && [ -n "$g" ] && echo "model/geomean/ort-2t-vs-1t: $g x"
exit 0
