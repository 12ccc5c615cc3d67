#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boot the VM with vtpu.ko loaded with PARAMS and run the kselftests (or
# the one binary TEST). The tests learn the parameters they must find
# from VTPU_<PARAM> variables, so a parameter the module ignored fails.
# Usage: tools/kselftest.sh BUILD MODULE "PARAMS" [TEST]
set -euo pipefail
build=$1 module=$2 params=$3 one=${4:-}
top=$(cd "$(dirname "$0")/.." && pwd)

envs=()
for p in $params; do
	k=${p%%=*}
	envs+=("VTPU_${k^^}=${p#*=}")
done
args=("$build/tests/kselftest")
[ -n "$one" ] && args+=("$one")

exec "$top/tools/vm/run.sh" --build "$build" --module "$module" \
	--params "$params" --timeout 900 -- \
	env "${envs[@]}" "$top/tests/kselftest/run.sh" "${args[@]}"
