#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Description: vtpu-smi on a machine without a vtpu device (the host):
# exit status 3 and one message saying how to get a device, --version
# matching the runtime's, and usage errors that say what was wrong and
# exit 2. The checks with a device run in the VM (kselftest vtpu_smi).
# Usage: vtpu_smi.sh BUILD
set -uo pipefail
build=${1:-${BUILD:?usage: vtpu_smi.sh BUILD}}
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
smi=$build/bin/vtpu-smi
n=0 failed=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failed=1
	echo "not ok $n - $1"
	shift
	for line in "$@"; do
		printf '#   %s\n' "$line"
	done
}

skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

# check WHAT CONDITION... : one TAP line; the output is shown on failure.
check() {
	local what=$1
	shift
	if "$@"; then
		ok "$what"
	else
		not_ok "$what" "status $rc, output:" "$out"
	fi
}

# run ARGS...: sets out (stdout and stderr) and rc.
run() {
	out=$("$smi" "$@" 2>&1)
	rc=$?
}

count() {
	grep -cF -- "$1" <<<"$out"
}

[ -x "$smi" ] || { not_ok "vtpu-smi is built" "no $smi: make $smi"; exit 1; }

msg="no /dev/accel device is driven by vtpu.ko"
if [ -d /sys/module/vtpu ]; then
	for what in "no device: exit status 3" "no device: message once" \
		    "no device: says how to load the module" \
		    "no device, --json: empty list, exit status 3" \
		    "no device, --loop: stops at once, message once"; do
		skip "$what" "vtpu.ko is loaded here"
	done
else
	run
	check "no device: exit status 3" [ "$rc" = 3 ]
	check "no device: message once" [ "$(count "$msg")" = 1 ]
	check "no device: says how to load the module" \
		[ "$(count "insmod driver/vtpu.ko")" = 1 ]
	out=$("$smi" --json 2>/dev/null)
	rc=$?
	check "no device, --json: empty list, exit status 3" \
		[ "$rc" = 3 -a "$out" = '{"devices": []}' ]
	run --loop 0.1 --count 3
	check "no device, --loop: stops at once, message once" \
		[ "$rc" = 3 -a "$(count "$msg")" = 1 ]
fi

major=$(sed -n 's/^#define VTPU_VERSION_MAJOR[[:space:]]*//p' \
	"$top/runtime/include/vtpu.h")
minor=$(sed -n 's/^#define VTPU_VERSION_MINOR[[:space:]]*//p' \
	"$top/runtime/include/vtpu.h")
run --version
check "--version prints vtpu-smi $major.$minor (runtime/include/vtpu.h)" \
	[ "$rc" = 0 -a "$out" = "vtpu-smi $major.$minor" ]

run --help
check "--help documents --id, --loop, --count and the exit statuses" \
	[ "$rc" = 0 -a "$(count "--id N")" = 1 -a "$(count "--loop SEC")" = 1 \
	  -a "$(count "--count N")" = 1 -a "$(count "exit status:")" = 1 ]

try="Try 'vtpu-smi --help'."
# usage ARGS... WHAT: exit 2 with WHAT and the hint, once each.
usage() {
	local what=${!#}

	run "${@:1:$#-1}"
	check "usage error '${*:1:$#-1}': exit 2, says '$what'" \
		[ "$rc" = 2 -a "$(count "$what")" = 1 -a "$(count "$try")" = 1 ]
}
usage --bogus "unknown option '--bogus'"
usage -x "unknown option '-x'"
usage -i "option '-i' needs a value"
usage --id two "--id wants a device index"
usage --loop 0 "--loop wants seconds"
usage -c 0 "--count wants a number of reports"
usage --interval 0 "--interval wants milliseconds"
usage --json=1 "option '--json' takes no value"
usage stray "unexpected argument 'stray'"

exit "$failed"
