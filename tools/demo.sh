#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make demo: install what is missing, build, boot QEMU with vtpu.ko and
# run a real model from ONNX's test data on /dev/accel/accel0 with
# vtpu-run: its outputs against the ones ONNX computed, then a profile
# summary. Usage: tools/demo.sh BUILD MODULE "PARAMS"
set -euo pipefail
build=$1 module=$2 params=$3
top=$(cd "$(dirname "$0")/.." && pwd)
data=/usr/share/libonnx-testdata/data
model=${VTPU_DEMO_MODEL:-$data/pytorch-converted/test_Conv2d_groups}
[ -f "$model/model.onnx" ] || { echo "demo: $model/model.onnx missing (apt-get install libonnx-testdata)"; exit 1; }

set=$model/test_data_set_0
args=()
for f in "$set"/input_*.pb; do args+=(-i "$f"); done
for f in "$set"/output_*.pb; do args+=(-e "$f"); done
echo "demo: $(basename "$model") on the accel backend in QEMU (vtpu.ko: $params)"
# The guest sees the host read-only, except the results share.
results=$build/demo
rm -rf "$results" && mkdir -p "$results"
exec "$top/tools/vm/run.sh" --build "$build" --module "$module" \
	--params "$params" --timeout 600 --results "$results" -- \
	"$build/bin/vtpu-run" -b accel -n 5 -p "$results/trace.json" \
	"${args[@]}" "$model/model.onnx"
