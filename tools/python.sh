#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The python suite: tests/python (pytest) on the host backend here, then
# the tests marked accel in QEMU with vtpu.ko loaded (the guest runs the
# host's /usr/bin/python3 over 9p). Counts come from pytest's JUnit XML:
# a skip is a skip, with its reason printed by -rs; a VM run that leaves
# no results is a failure. Prints "python: N passed, N failed, N skipped".
# Usage: tools/python.sh BUILD MODULE "PARAMS"
set -uo pipefail
build=$1 module=$2 params=$3
top=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-/usr/bin/python3}
res=$build/python-tests
rm -rf "$res" && mkdir -p "$res/vm"

export PYTHONPATH=$build/python PYTHONDONTWRITEBYTECODE=1 VTPU_BUILD=$build \
	VTPU_README_EXAMPLE=$build/examples/readme_python.py
pytest=("$py" -m pytest -p no:cacheprovider -q -rs "$top/tests/python")

VTPU_BACKEND=host "${pytest[@]}" -m "not accel" --junitxml="$res/host.xml" \
	2>&1 | tee "$res/host.log"

# numpy's AVX code crashes under QEMU 7.2's TCG (its AVX emulation is
# new; numpy alone, with no vtpu imported, segfaults there): the guest's
# numpy keeps to SSE.
npy_off="AVX F16C FMA3 AVX2"
"$top/tools/vm/run.sh" --build "$build" --module "$module" --params "$params" \
	--timeout 600 --results "$res/vm" -- \
	env PYTHONPATH="$PYTHONPATH" PYTHONDONTWRITEBYTECODE=1 \
	VTPU_README_EXAMPLE="$VTPU_README_EXAMPLE" VTPU_TEST_ACCEL=1 \
	VTPU_PARAMS="$params" NPY_DISABLE_CPU_FEATURES="$npy_off" \
	"${pytest[@]}" -m accel --junitxml="$res/vm/accel.xml" \
	2>&1 | tee "$res/accel.log"
vm=${PIPESTATUS[0]}

# passed failed skipped of one JUnit file; "0 1 0" when it is missing.
count() {
	"$py" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print(0, 1, 0)
    sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
k = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - k, f, k)
PY
}
read -r hp hf hk < <(count "$res/host.xml")
read -r ap af ak < <(count "$res/vm/accel.xml")
[ -f "$res/host.xml" ] || echo "python: the host run left no results"
[ -f "$res/vm/accel.xml" ] || echo "python: the VM run left no results (status $vm)"
if [ "$vm" != 0 ] && [ "$af" = 0 ]; then
	af=1
	echo "python: the VM run failed (status $vm)"
fi
echo "python-host: $hp passed, $hf failed, $hk skipped"
echo "python-accel: $ap passed, $af failed, $ak skipped"
p=$((hp + ap)) f=$((hf + af)) k=$((hk + ak))
echo "python: $p passed, $f failed, $k skipped"
[ "$f" = 0 ]
