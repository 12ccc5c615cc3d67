#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Description: vtpu-compile as a user drives it: HLO text and ONNX models
# (by extension, by content, from stdin), --version, and GNU-style usage
# errors. One TAP line per check.
# Usage: tests/tools/vtpu_compile.sh BUILD
set -uo pipefail
build=${1:-${BUILD:?usage: vtpu_compile.sh BUILD}}
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
cc=$build/bin/vtpu-compile
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

tool=$cc
. "$top/tests/tools/lib/tap.sh"

cat > m.hlo <<'EOF'
HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ROOT y = f32[4] add(x, x)
}
EOF
if ! "$py" - <<'EOF'
import onnx
from onnx import helper, TensorProto

def model(name, dims):
	x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
	y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
	g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
			      [x], [y])
	m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
	open(name, "wb").write(m.SerializeToString())

model("relu.onnx", [2, 3])
model("relu.model", [2, 3])	# ONNX without the extension
model("sym.onnx", ["N", 3])
EOF
then
	echo "not ok 1 - make the test models (onnx)"
	exit 1
fi

t 0 "HLO: compiles" m.hlo && has out '^m.hlo: 1 kernels, [0-9]+ instructions' "HLO: the summary line"
t 0 "ONNX by extension: compiles" relu.onnx && ok "ONNX by extension: compiles"
has out '^relu.onnx: [0-9]+ kernels, [0-9]+ instructions, [0-9]+ bytes$' "ONNX: the summary line"
has out '^  parameters       24 B$' "ONNX: 2x3 f32 parameter is 24 bytes"
hasnt err 'unexpected character' "ONNX: not read as HLO"
t 0 "ONNX without .onnx: sniffed" relu.model && has out '^relu.model: ' "ONNX without .onnx: compiles"
t 0 "ONNX from stdin: sniffed" - < relu.onnx && has out '^-: [0-9]+ kernels' "ONNX from stdin: compiles"
t 0 "ONNX --disasm" --disasm relu.onnx && ok "ONNX --disasm"
t 0 "ONNX -o FILE" -o relu.bin relu.onnx && [ -s relu.bin ] && ok "ONNX -o FILE: writes the binary"
t 1 "ONNX with a symbolic dim: exit 1" sym.onnx && ok "ONNX with a symbolic dim: exit 1"
has err "^vtpu-compile: sym.onnx: .*symbolic dimension 'N'" "ONNX with a symbolic dim: says which"
printf '\x08\x07\x12\x00garbage' > junk.onnx
t 1 "not an ONNX model: exit 1" junk.onnx && has err '^vtpu-compile: junk.onnx: ' \
	"not an ONNX model: a message naming the file"
printf '{junk\n' > junk.hlo
t 1 "bad HLO: exit 1" junk.hlo && has err '^junk.hlo:1:1: ' "bad HLO: file:line:col"
printf 'HloModule m\nENTRY e {\n  p = u32[4] parameter(0)\n  ROOT s = u32[4] shift-right-logical(p, p)\n}\n' > shift.hlo
t 1 "unsupported HLO: exit 1" shift.hlo &&
	has err "^shift.hlo:4:19: unsupported opcode 'shift-right-logical'" \
	"unsupported HLO: names the construct at LINE:COL"
printf 'HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT s = f32[4] custom-call(p), custom_call_target="cublas$gemm"\n}\n' > cc.hlo
t 1 "custom-call: exit 1" cc.hlo &&
	has err "^cc.hlo:4:54: unsupported: custom-call target 'cublas\\\$gemm'" \
	"custom-call: names the target at LINE:COL"

major=$(sed -n 's/^#define VTPU_VERSION_MAJOR[[:space:]]*//p' "$top/runtime/include/vtpu.h")
minor=$(sed -n 's/^#define VTPU_VERSION_MINOR[[:space:]]*//p' "$top/runtime/include/vtpu.h")
t 0 "--version: exit 0" --version && ok "--version: exit 0"
if [ "$(cat out)" = "vtpu-compile $major.$minor" ]; then ok "--version: vtpu-compile $major.$minor"
else not_ok "--version: vtpu-compile $major.$minor" "printed '$(cat out)'"; fi
t 0 "--help: exit 0" --help && has out 'onnx' "--help mentions ONNX"
has out -- '--version' "--help mentions --version"

usage_case "unknown option" "^vtpu-compile: unknown option '--frob'$" --frob m.hlo
usage_case "unknown short option" "^vtpu-compile: unknown option -- 'x'$" -x m.hlo
usage_case "missing argument" "^vtpu-compile: option '-o' needs an argument$" m.hlo -o
usage_case "bad --vmem" "^vtpu-compile: --vmem wants a positive number, not 'x'$" --vmem x m.hlo
usage_case "no input" "^vtpu-compile: no input file$"
usage_case "two inputs" "^vtpu-compile: one input file, please; 'relu.onnx' is one too many$" m.hlo relu.onnx

echo "1..$n"
exit $failed
