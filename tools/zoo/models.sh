#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Exports the zoo (tools/zoo/export.py, Debian's /usr/bin/python3 with
# python3-torch and python3-torchvision) once and prints the directory
# that holds it: one directory per model (model.onnx, info, and
# test_data_set_N/ of input_*.npy and output_*.npy) and a MANIFEST of the
# models in order. The export is cached in BUILD/zoo, keyed by export.py
# and the torch and torchvision versions: a changed script exports again.
# The zoo suite (zoo.sh) and the model benchmark (tools/bench/models.sh)
# both take their models from here.
# Usage: tools/zoo/models.sh BUILD
set -uo pipefail
build=${1:?usage: tools/zoo/models.sh BUILD}
top=$(cd "$(dirname "$0")/../.." && pwd)

key=$( { cat "$top/tools/zoo/export.py"
	 dpkg-query -W -f='${Version}\n' python3-torch python3-torchvision; } |
	sha256sum | cut -c1-16)
models=$build/zoo/export-$key
if [ ! -f "$models/MANIFEST" ]; then
	rm -rf "$build"/zoo/export-* && mkdir -p "$build/zoo"
	start=$(date +%s)
	if ! /usr/bin/python3 "$top/tools/zoo/export.py" "$models.tmp" \
		> "$build/zoo/export.log" 2>&1; then
		cat "$build/zoo/export.log" >&2
		echo "zoo: the export failed (log: $build/zoo/export.log)" >&2
		exit 1
	fi
	mv "$models.tmp" "$models"
	echo "zoo: exported the models in $(($(date +%s) - start)) s" >&2
fi
echo "$models"
