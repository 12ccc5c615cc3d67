#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Description: vtpu-run as a user drives it on the host backend: broken
# input files and paths fail early with a message naming them, usage
# errors are GNU style, input conversions are reported, HLO input shapes
# are checked, and the timing report (text and --json) says what ran
# where. One TAP line per check.
# Usage: tests/tools/vtpu_run.sh BUILD
set -uo pipefail
build=${1:-${BUILD:?usage: vtpu_run.sh BUILD}}
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
run=$build/bin/vtpu-run
py=/usr/bin/python3
export VTPU_BACKEND=host
# No compile cache on disk: the checks must not depend on earlier runs.
export XDG_CACHE_HOME=$(mktemp -d)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$XDG_CACHE_HOME"' EXIT
cd "$tmp" || exit 1

tool=$run
. "$top/tests/tools/lib/tap.sh"

cat > m.hlo <<'EOF'
HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
EOF
if ! "$py" - <<'EOF'
import numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto

np.save("x.npy", np.array([0, 1, 2, 3], np.float32))
np.save("y.npy", np.array([0, 2, 4, 6], np.float32))
full = open("x.npy", "rb").read()
open("short.npy", "wb").write(full[:-4])	# 3 of 4 elements
t = numpy_helper.from_array(np.arange(4, dtype=np.float32), "x")
t.dims[:] = [8]				# raw_data for 4 of 8
open("short_raw.pb", "wb").write(t.SerializeToString())
t = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[8])
t.float_data.extend([1, 2, 3, 4])	# typed fields, 4 of 8
open("short_typed.pb", "wb").write(t.SerializeToString())
np.save("i64.npy", np.array([1, 2, 2**40 + 1, 3], np.int64))
np.save("i64ok.npy", np.array([1, 2, 3, 4], np.int64))
np.save("i32big.npy", np.array([2**24 + 1, 0, 0, 0], np.int32))
np.save("f64.npy", np.array([0.1, 0.5, 1, 2]))
np.save("f64ok.npy", np.array([0.5, 1, 2, 3]))
np.save("b.npy", np.array([True, False, True, True]))
np.save("x22.npy", np.zeros((2, 2), np.float32))

# Add(x, x) over a symbolic batch dim
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])
g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "g",
		      [x], [y])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
open("sym.onnx", "wb").write(m.SerializeToString())
open("sym.model", "wb").write(m.SerializeToString())	# no extension
np.save("x23.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
np.save("y23.npy", 2 * np.arange(6, dtype=np.float32).reshape(2, 3))
np.save("x53.npy", np.arange(15, dtype=np.float32).reshape(5, 3))
np.save("y53.npy", 2 * np.arange(15, dtype=np.float32).reshape(5, 3))
np.save("x32.npy", np.arange(6, dtype=np.float32).reshape(3, 2))

# Loop(M, cond, acc) with M and cond graph inputs: it loops on the
# device. The body reads an initializer (a constant) and a graph input
# (a run-time value) of the enclosing graph, and computes its own cond.
T = TensorProto
body = helper.make_graph(
    [helper.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
     helper.make_node("Mul", ["acc", "scale"], ["m"]),
     helper.make_node("Add", ["m", "x"], ["m2"]),
     helper.make_node("Add", ["m2", "fi"], ["acc2"]),
     helper.make_node("ReduceSum", ["acc2"], ["s"], keepdims=0),
     helper.make_node("Less", ["s", "limit"], ["cond2"])], "body",
    [helper.make_tensor_value_info("i", T.INT64, []),
     helper.make_tensor_value_info("cond", T.BOOL, []),
     helper.make_tensor_value_info("acc", T.FLOAT, [4])],
    [helper.make_tensor_value_info("cond2", T.BOOL, []),
     helper.make_tensor_value_info("acc2", T.FLOAT, [4])])
scale = np.array([1.5, 1.25, 1.0, 0.5], np.float32)
g = helper.make_graph(
    [helper.make_node("Loop", ["M", "c0", "a0"], ["af"], body=body)], "g",
    [helper.make_tensor_value_info("M", T.INT64, []),
     helper.make_tensor_value_info("c0", T.BOOL, []),
     helper.make_tensor_value_info("a0", T.FLOAT, [4]),
     helper.make_tensor_value_info("x", T.FLOAT, [4])],
    [helper.make_tensor_value_info("af", T.FLOAT, [4])],
    [numpy_helper.from_array(scale, "scale"),
     numpy_helper.from_array(np.array(1e4, np.float32), "limit")])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
open("loop.onnx", "wb").write(m.SerializeToString())
a0 = np.array([0.1, 0.2, -0.3, 0.4], np.float32)
xv = np.array([0.5, -0.25, 1.0, 2.0], np.float32)
np.save("la.npy", a0)
np.save("lx.npy", xv)
# (M, cond): 19 passes until the sum passes 1e4; 3 passes; none; none
for k, (trips, c0) in enumerate([(1000, True), (3, True), (0, True), (50, False)]):
    acc, i, go = a0.astype(np.float64), 0, c0
    while i < trips and go:
        acc = acc * scale + xv + i
        go = acc.astype(np.float32).sum() < 1e4
        i += 1
    np.save("lm%d.npy" % k, np.array(trips, np.int64))
    np.save("lc%d.npy" % k, np.array(c0))
    np.save("lw%d.npy" % k, acc.astype(np.float32))
EOF
then
	echo "not ok 1 - make the test models and tensors (numpy, onnx)"
	exit 1
fi

# ---- 1: broken input files: a message naming the file, exit 1 ----------
for f in short.npy short_raw.pb short_typed.pb; do
	if t 1 "truncated $f: exit 1" -i "$f" m.hlo; then
		ok "truncated $f: exit 1"
		has err "^vtpu-run: $f: " "truncated $f: the message names the file"
		hasnt err 'double free|corruption|Aborted' "truncated $f: no heap corruption"
	fi
done
has err 'element count does not match dims' "short typed .pb: says why"
if command -v valgrind > /dev/null; then
	valgrind -q --error-exitcode=99 --leak-check=no "$run" -i short.npy \
		m.hlo > out 2> err
	rc=$?
	if [ "$rc" = 1 ]; then ok "truncated .npy under valgrind: no memory errors"
	else not_ok "truncated .npy under valgrind: no memory errors" "exit status $rc"; fi
else
	skip "truncated .npy under valgrind: no memory errors" "no valgrind"
fi

# ---- 2: directories where files belong ---------------------------------
mkdir -p adir
t 1 "directory as the model: exit 1" adir && ok "directory as the model: exit 1"
has err '^vtpu-run: model adir: is a directory' "directory as the model: says so"
hasnt err 'Cannot allocate memory' "directory as the model: no ENOMEM"
t 1 "directory as an input: exit 1" -i adir m.hlo && ok "directory as an input: exit 1"
has err '^vtpu-run: input adir: is a directory' "directory as an input: says so"
t 1 "missing model: exit 1" nosuch.hlo && ok "missing model: exit 1"
has err '^vtpu-run: model nosuch.hlo: No such file' "missing model: says so"

# ---- 3: -o checked before compiling and running ------------------------
t 1 "-o missing dir: exit 1" -i x.npy -o nodir m.hlo && ok "-o missing dir: exit 1"
has err '^vtpu-run: output directory nodir: No such file or directory' \
	"-o missing dir: says so"
hasnt out 'backend|compile' "-o missing dir: nothing compiled or run"
t 1 "-o a file: exit 1" -i x.npy -o m.hlo m.hlo && ok "-o a file: exit 1"
has err '^vtpu-run: output directory m.hlo: not a directory' "-o a file: says so"
mkdir -p res
t 0 "-o DIR: saves the outputs" -q -i x.npy -o res m.hlo &&
	"$py" -c 'import numpy as np, sys
sys.exit(not (np.load("res/output_0.npy") == [0, 2, 4, 6]).all())' &&
	ok "-o DIR: saves the outputs"

# ---- 4: usage errors, GNU style ----------------------------------------
usage_case "unknown long option" "^vtpu-run: unknown option '--frob'$" --frob m.hlo
usage_case "unknown short option" "^vtpu-run: unknown option -- 'x'$" -x m.hlo
usage_case "missing argument" "^vtpu-run: option '-n' needs an argument$" m.hlo -n
usage_case "bad --repeat" "^vtpu-run: --repeat wants a number from 1 to [0-9]+, not '0'$" -n 0 m.hlo
usage_case "bad --warmup" "^vtpu-run: --warmup wants a number from 0 to [0-9]+, not 'x'$" -w x m.hlo
usage_case "bad --backend" "^vtpu-run: --backend wants auto, accel or host, not 'gpu'$" -b gpu m.hlo
usage_case "bad --rtol" "^vtpu-run: --rtol wants a number >= 0, not '-1'$" --rtol -1 m.hlo
usage_case "no model" "^vtpu-run: no model given$"
usage_case "two models" "^vtpu-run: one model, please; 'sym.onnx' is one too many$" m.hlo sym.onnx
t 0 "--help: exit 0" --help && ok "--help: exit 0"
for o in --warmup --json --version 'p90' 'DIR must exist'; do
	has out "$o" "--help mentions $o"
done

# ---- 5: conversions are reported; HLO shapes are checked ---------------
t 0 "int64 above 2^24 into f32: runs" -q -i i64.npy m.hlo && ok "int64 above 2^24 into f32: runs"
has err '^vtpu-run: note: input 0 \(i64.npy\): converted from int64 to float' \
	"int64 input: a note says from what to what"
has err '^vtpu-run: warning: input 0 \(i64.npy\): 1 of 4 values changed by the conversion \(element 2: 1099511627777 became 1099511627776\)' \
	"int64 2^40+1: a warning names the changed value"
t 0 "small int64 into f32: runs" -q -i i64ok.npy m.hlo && ok "small int64 into f32: runs"
has err 'note: input 0 \(i64ok.npy\): converted from int64 to float' "small int64: a note"
hasnt err 'warning' "small int64: no warning (exact)"
t 0 "int32 2^24+1 into f32: runs" -q -i i32big.npy m.hlo &&
	has err 'warning: input 0 \(i32big.npy\): 1 of 4 values changed .*16777217 became 16777216' \
		"int32 2^24+1: a warning"
t 0 "f64 0.1 into f32: runs" -q -i f64.npy m.hlo &&
	has err 'warning: input 0 \(f64.npy\): 1 of 4 values changed .*element 0: 0.1' \
		"f64 0.1: a warning (it rounds)"
t 0 "exact f64 into f32: runs" -q -i f64ok.npy m.hlo &&
	hasnt err 'warning' "exact f64: a note, no warning"
has err 'converted from double to float' "exact f64: the note"
t 0 "bool into f32: runs" -i b.npy m.hlo &&
	has err 'note: input 0 \(b.npy\): converted from bool to float' "bool: a note"
has out '^output 0: f32\[4\] = 2 0 2 2$' "bool: true is 1"
t 0 "f32 into f32: runs" -q -i x.npy m.hlo && hasnt err 'note|warning' "f32 input: no note"
t 1 "HLO input of the wrong shape: refused" -i x22.npy m.hlo &&
	ok "HLO input of the wrong shape: refused"
has err '^vtpu-run: input 0 \(x22.npy\) has shape float\[2,2\], the model wants f32\[4\]$' \
	"wrong shape: names the input, both shapes"
t 0 "ONNX symbolic dims: filled by the input" -i x53.npy -e y53.npy sym.onnx &&
	has out '^output 0: f32\[5,3\] = ' "ONNX symbolic dims: output shape from the input"
has out 'vs y53.npy: .*: match' "ONNX symbolic dims: right values"
t 1 "ONNX static dim contradicted: refused" -i x32.npy sym.onnx &&
	has err 'dimension 1 is 3, bound to 2' "ONNX static dim contradicted: says which"
t 0 "ONNX without .onnx: sniffed" -q -i x23.npy -e y23.npy sym.model &&
	has out 'vs y23.npy: .*: match' "ONNX without .onnx: runs as ONNX"
for k in 0 1 2 3; do
	t 0 "ONNX Loop with M and cond at run time ($k): runs on the device" \
		-q -i lm$k.npy -i lc$k.npy -i la.npy -i lx.npy -e lw$k.npy loop.onnx &&
		has out "vs lw$k.npy: .*: match" "ONNX Loop with M and cond at run time ($k): right values"
done

# ---- 6: --version, warm-up, percentiles, device, --json ----------------
major=$(sed -n 's/^#define VTPU_VERSION_MAJOR[[:space:]]*//p' "$top/runtime/include/vtpu.h")
minor=$(sed -n 's/^#define VTPU_VERSION_MINOR[[:space:]]*//p' "$top/runtime/include/vtpu.h")
t 0 "--version: exit 0" --version && ok "--version: exit 0"
if [ "$(cat out)" = "vtpu-run $major.$minor" ]; then ok "--version: vtpu-run $major.$minor"
else not_ok "--version: vtpu-run $major.$minor" "printed '$(cat out)'"; fi

t 0 "-n 5: runs" -q -n 5 -i x.npy m.hlo && ok "-n 5: runs"
has out '^runtime: 6 executions' "-n 5: one warm-up by default (6 executions)"
has out 'after 1 warm-up run' "-n 5: the warm-up is reported"
has out '^backend host, device host0 \(index 0 of 1, [0-9]+ cores\); compile [0-9.]+ ms; run [0-9.]+ ms \(median of 5\)$' \
	"the device that ran it is named"
# what tools/bench/models.sh and tools/zoo/zoo.sh parse
ms=$(sed -nE 's/.*; run ([0-9.]+) ms \(median.*/\1/p' out)
if [ -n "$ms" ]; then ok "the median is where models.sh looks"; else not_ok "the median is where models.sh looks" "no '; run X ms (median'"; fi
if awk '/^timing: / { ok = $3 <= $6 && $6 <= $9 && $9 <= $12 && $6 == m }
	END { exit !ok }' m="$ms" out; then
	ok "timing: min <= p50 <= p90 <= max, p50 is the median"
else
	not_ok "timing: min <= p50 <= p90 <= max, p50 is the median" "$(grep '^timing' out)"
fi
t 0 "-n 3 -w 0" -q -n 3 -w 0 -i x.npy m.hlo && has out '^runtime: 3 executions' "-w 0: no warm-up"
t 0 "-n 1 --warmup 2" -q -n 1 --warmup 2 -i x.npy m.hlo &&
	has out '^runtime: 3 executions' "--warmup 2: two untimed runs"
t 0 "-n 1: no warm-up" -q -i x.npy m.hlo && has out '^runtime: 1 executions' "-n 1: no warm-up by default"

t 0 "--json: runs" --json -n 5 -i x.npy -e y.npy -o res m.hlo && ok "--json: runs"
if "$py" - out <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, "more than the JSON on stdout"
j = json.loads(lines[0])
for k in ("model", "backend", "device", "runs", "warmup", "min_ms", "p50_ms",
	  "p90_ms", "outputs", "inputs", "match"):
	assert k in j, k
assert j["model"] == "m.hlo" and j["backend"] == "host"
assert j["device"] == "host0" and j["device_index"] == 0
assert j["runs"] == 5 and j["warmup"] == 1
assert 0 < j["min_ms"] <= j["p50_ms"] <= j["p90_ms"] <= j["max_ms"]
o = j["outputs"][0]
assert o["shape"] == "f32[4]" and o["file"] == "res/output_0.npy"
assert o["expect"]["match"] is True and j["match"] is True
EOF
then ok "--json: one object with the documented keys and sane values"
else not_ok "--json: one object with the documented keys and sane values" "$(head -c 300 out)"; fi
t 1 "--json with a mismatch: exit 1" --json -i x.npy -e x.npy m.hlo &&
	has out '"match": false' "--json with a mismatch: match false"
t 0 "--json with a converted input" --json -i i64ok.npy m.hlo &&
	has out '"converted_from": "int64"' "--json: converted inputs say from what"

echo "1..$n"
exit $failed
