#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Guest side of `make check-debug`: wraps a command (run.sh --wrap) after
# insmod and before rmmod on the debug kernel (tools/vm/debug-kernel.sh).
#
# Usage: debug-guest.sh [--failslab PERCENT] COMMAND [ARGS...]
#
# Before the command: a kmemleak scan whose report (boot and insmod) goes
# to $VTPU_RESULTS/kmemleak.before.txt, then "clear", so the final scan
# shows only what leaked since. With --failslab, failslab and
# fail_page_alloc fail PERCENT % of the allocations made with vtpu's code
# on the stack (sleeping ones too), counted in dmesg by "FAULT_INJECTION:
# forcing a failure" lines. After the command: injection off, then two
# kmemleak scans a few seconds apart (objects freed after an RCU grace
# period or by a worker are not leaks; a second scan lets them go), the
# report to $VTPU_RESULTS/kmemleak.txt. rmmod (guest.sh) comes after: a
# leak must be found while the module's text still names it.
# Exits with the command's status.
set -u

failslab=
while [ $# -gt 0 ]; do
	case $1 in
	--failslab) failslab=${2:?}; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "debug-guest: no command" >&2; exit 2; }

res=${VTPU_RESULTS:?}
dbg=/sys/kernel/debug
kml=$dbg/kmemleak

say() {
	echo "debug-guest: $*" >&2
}

kmemleak_scan() {
	echo scan >"$kml" || say "kmemleak scan failed"
}

# Each knob of a fault_attr directory, by name; fails at the first that
# does not take.
fault_set() {
	local dir=$1
	shift
	while [ $# -gt 0 ]; do
		echo "$2" >"$dir/$1" || { say "cannot set $dir/$1 to $2"; return 1; }
		shift 2
	done
}

if [ -w "$kml" ]; then
	kmemleak_scan
	cat "$kml" >"$res/kmemleak.before.txt"
	echo clear >"$kml"
else
	say "no $kml (boot with kmemleak=on): no leak check"
fi

faults=()
faults_off() {
	local f
	for f in ${faults[@]+"${faults[@]}"}; do
		fault_set "$f" probability 0
	done
}

if [ -n "$failslab" ]; then
	mod=${VTPU_MODULE##*/}
	mod=${mod%%.ko*}
	# The module's text starts at the address /proc/modules gives (its
	# first memory region); its total size bounds the end from above.
	# vtpu is the only loadable module on the debug kernel, so the range
	# holds no other module's code.
	# (No process substitution: the guest has no /dev/fd.)
	read -r _ size _ _ _ base _ <<<"$(grep "^$mod " /proc/modules)"
	if [ -z "${base:-}" ] || [ "$base" = 0x0000000000000000 ]; then
		say "cannot find $mod's text in /proc/modules"
		exit 1
	fi
	# Hex throughout: the addresses do not fit bash's signed arithmetic
	# as decimals (printf prints the wrapped sum right), and debugfs
	# takes 0x.
	start=$base
	end=$(printf '%#x' $((base + size)))
	# The probability last, and only once the filter is in place: without
	# it every allocation in the system could fail, init's too.
	for f in failslab fail_page_alloc; do
		[ -d "$dbg/$f" ] || { say "no $dbg/$f"; exit 1; }
		fault_set "$dbg/$f" require-start "$start" require-end "$end" \
			stacktrace-depth 32 ignore-gfp-wait N times -1 \
			interval 1 space 0 verbose 1 \
			verbose_ratelimit_interval_ms 0 || exit 1
	done
	fault_set "$dbg/fail_page_alloc" ignore-gfp-highmem N min-order 0 || exit 1
	for f in failslab fail_page_alloc; do
		faults+=("$dbg/$f")
		fault_set "$dbg/$f" probability "$failslab" || { faults_off; exit 1; }
	done
	say "failing $failslab% of allocations from $mod ($start-$end)"
fi

"$@"
rc=$?
faults_off

if [ -w "$kml" ]; then
	kmemleak_scan
	sleep 5
	kmemleak_scan
	cat "$kml" >"$res/kmemleak.txt"
fi
exit $rc
