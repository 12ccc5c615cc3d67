#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What compiling a real model costs `vtpu-run`, and what the compile
# cache saves: the zoo's largest model (tools/zoo/models.sh), with a
# fresh cache directory, then again with it warm (the median of
# BENCH_ROUNDS, default 3, runs). A hit must cost a fraction of a
# compile: the cache finds the model's bytes without parsing them
# (vtpu_compile_onnx()). One figure a line:
#   compile/onnx-<name>-cold: MS ms
#   compile/onnx-<name>-cached: MS ms
#   compile/onnx-<name>-cold-vs-cached: R x
# Usage: tools/bench/compile_onnx.sh BUILD
set -uo pipefail
build=${1:?usage: tools/bench/compile_onnx.sh BUILD}
top=$(cd "$(dirname "$0")/../.." && pwd)
run=$build/bin/vtpu-run
rounds=${BENCH_ROUNDS:-3}

models=$("$top/tools/zoo/models.sh" "$build") || exit 1
# the largest model file: where parsing costs most
m=$(cd "$models" && ls -S */model.onnx | head -1) && m=${m%/model.onnx}
[ -n "$m" ] || { echo "compile/onnx: FAIL (no zoo model)"; exit 1; }
cache=$(mktemp -d) || exit 1
trap 'rm -rf "$cache"' EXIT

compile_ms() {	# the compile time vtpu-run reports, in ms
	local args=() f
	for f in "$models/$m"/test_data_set_0/input_*.npy; do args+=(-i "$f"); done
	VTPU_CACHE_DIR=$cache "$run" -b host -q --json "${args[@]}" \
		"$models/$m/model.onnx" 2>/dev/null |
		sed -nE 's/.*"compile_ms": *([0-9.]+).*/\1/p'
}

cold=$(compile_ms)
warm=()
for ((i = 0; i < rounds; i++)); do warm+=("$(compile_ms)"); done
hot=$(printf '%s\n' "${warm[@]}" | sort -g | awk '{ a[NR] = $1 } END {
	if (NR) printf "%s", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
if [ -z "$cold" ] || [ -z "$hot" ]; then
	echo "compile/onnx-$m: FAIL (vtpu-run did not compile it)"
	exit 1
fi
echo "compile/onnx-$m-cold: $cold ms"
echo "compile/onnx-$m-cached: $hot ms"
awk -v a="$cold" -v b="$hot" -v m="$m" \
	'BEGIN { printf "compile/onnx-%s-cold-vs-cached: %.1f x\n", m, a / b }'
