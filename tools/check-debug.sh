#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make check-debug`: the kselftests and the kernel fuzzer on a debug
# kernel (KASAN, UBSAN, lockdep, kmemleak, failslab; tools/vm/debug.config),
# built once and cached by tools/vm/debug-kernel.sh. vtpu.ko is built
# against it from a copy of driver/ and uapi/ in BUILD/debug/src, never in
# driver/ itself.
#
# Phases, each one boot with kmemleak=on (tools/vm/debug-guest.sh scans
# before rmmod):
#   kselftest  tests/kselftest/run.sh as tools/kselftest.sh runs it
#   fuzz       tools/fuzz-kernel.sh for FUZZ_SECONDS
#   failslab   the fuzzer again (the kselftests while there is no fuzzer)
#              with FAILSLAB_PERCENT % of vtpu's allocations failing;
#              judged only on splats, leaks, hangs and a clean rmmod, since
#              -ENOMEM is what the workload is meant to get
# Ends with the detector lines and
#   check-debug: N passed, N failed, N skipped
# (the kselftests' counts plus one per fuzz phase, plus one failure per
# phase whose VM run had a problem its tests did not count). Exits nonzero
# on any failure or report. Results: BUILD/debug/results/<phase>/.
#
# Usage: tools/check-debug.sh BUILD "PARAMS" [FUZZ_SECONDS]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
[ $# -ge 2 ] || { echo "usage: tools/check-debug.sh BUILD \"PARAMS\" [FUZZ_SECONDS]" >&2; exit 2; }
build=$(cd "$1" && pwd) params=$2 fuzz_seconds=${3:-120}
failslab_percent=${FAILSLAB_PERCENT:-10}
dbg=$build/debug
logs=$dbg/logs
start=$(date +%s)
mkdir -p "$logs"

passed=0 failed=0 skipped=0

# --- the kernel and the module ---------------------------------------------

if ! tree=$(tools/vm/debug-kernel.sh); then
	echo "check-debug: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
image=$tree/arch/x86/boot/bzImage

# Sources only: driver/ may hold another build's objects.
src=$dbg/src
rm -rf "$src"
mkdir -p "$src/driver" "$src/uapi"
find driver -maxdepth 1 -type f \( -name '*.[ch]' -o -name Kbuild -o -name Makefile \) \
	-exec cp {} "$src/driver/" \;
cp -r uapi/. "$src/uapi/"
echo "=== module (against $tree)"
if ! make -C "$tree" M="$src/driver" CONFIG_DRM_ACCEL_VTPU=m \
	KCFLAGS=-Werror W=1 modules >"$logs/module.log" 2>&1; then
	cat "$logs/module.log"
	echo "check-debug: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
module=$src/driver/vtpu.ko

# --- running a phase ---------------------------------------------------------

# kmemleak=on: the debug kernel has kmemleak off by default (see
# debug.config). A bigger log buffer: KASAN and lockdep reports are long
# and the ones that scroll out are the first, most useful ones.
# pci=noacpi: under TCG this kernel's AML interpreter is so slow that
# QEMU's PCI routing methods (_PRT) hit ACPI's 30 s loop timeout, twice
# per boot; the legacy routing table boots in 20 s instead of 90.
# no5lvl: QEMU's "max" CPU has LA57, and with 5-level paging KASAN reports
# a wild-memory-access when an interrupt lands while identify_cpu() has
# the boot CPU's features cleared (the direct map's ff11... addresses then
# look out of range): a kernel false positive at 0.008 s, before any of
# vtpu runs, seen in about one boot in three.
# kmemleak's own lines are judged here, not by run.sh (which would match
# the command line too): the scan before the command also reports the
# boot's leaks, which are not vtpu's.
vm_opts=(--kernel "$image" --append "kmemleak=on log_buf_len=8M pci=noacpi no5lvl"
	 --build "$build"
	 --allow-dmesg '[Cc]ommand line: '
	 --allow-dmesg 'kmemleak: Kernel memory leak detector initialized'
	 --allow-dmesg 'kmemleak: [0-9]+ new suspected memory leaks')

# What the kselftests read back (as tools/kselftest.sh sets it).
envs=()
for p in $params; do
	k=${p%%=*}
	envs+=("VTPU_${k^^}=${p#*=}")
done

# Per detector, summed over the phases. lockdep's line also counts what
# DEBUG_ATOMIC_SLEEP and RCU's lockdep checks report, and failed lockdep
# assertions whose function says so; "other" is every other splat run.sh
# fails a run for (one per header).
declare -A reports=([kasan]=0 [ubsan]=0 [lockdep]=0 [kmemleak]=0 [other]=0)
declare -A detector_re=(
	[kasan]='BUG: KASAN: |KASAN: (null-ptr-deref|maybe wild-memory-access|probably user-memory-access)'
	[ubsan]='UBSAN: '
	[lockdep]='possible circular locking dependency|possible recursive locking|inconsistent lock state|possible irq lock inversion|safe -> [A-Z]+-unsafe lock order|suspicious RCU usage|bad unlock balance|held lock freed|lock held when returning to user space|Nested lock was not taken|sleeping function called from invalid context|scheduling while atomic|DEBUG_LOCKS_WARN_ON|WARNING: .* at .*lockdep'
)
other_re='BUG:|WARNING:|Oops|Kernel panic|general protection fault|blocked for more than|soft lockup|hard LOCKUP|detected stalls?'
# What an allocation failure prints, with a stack, when the caller did not
# ask for silence: expected where failures are injected.
alloc_warn_re='page allocation failure|vmalloc error:'


# Count the detectors' reports in a phase's results; print what they
# found. With "injected", allocation failure warnings are no splat, but a
# stack dump that neither they nor a report's header explain is.
count_reports() {
	local res=$1 injected=${2:-} log d n all_re headers=0
	log=$res/dmesg.txt
	[ -f "$log" ] || log=$res/console.log
	all_re=$(IFS='|'; echo "${detector_re[*]}")
	for d in kasan ubsan lockdep other; do
		if [ "$d" = other ]; then
			n=$(grep -aE -- "$other_re" "$log" 2>/dev/null |
			    grep -acvE -- "$all_re")
		else
			n=$(grep -acE -- "${detector_re[$d]}" "$log" 2>/dev/null)
		fi
		n=${n:-0}
		headers=$((headers + n))
		if [ "$n" -gt 0 ]; then
			echo "check-debug: $d: $n in $log:"
			grep -aE -A 30 -- "${detector_re[$d]:-$other_re}" "$log" |
				head -n 60 | sed 's/^/  /'
		fi
		reports[$d]=$((reports[$d] + n))
	done
	if [ -n "$injected" ]; then
		local traces warns
		traces=$(grep -ac 'Call Trace:' "$log" 2>/dev/null)
		warns=$(grep -acE -- "$alloc_warn_re" "$log" 2>/dev/null)
		n=$((${traces:-0} - ${warns:-0} - headers))
		if [ "$n" -gt 0 ]; then
			echo "check-debug: other: $n stack dumps that no allocation failure explains in $log"
			reports[other]=$((reports[other] + n))
		fi
	fi
	# Leaks since the command started, plus any from insmod (the report
	# before it also holds the boot's, which are not ours).
	n=$(grep -c '^unreferenced object' "$res/kmemleak.txt" 2>/dev/null)
	n=${n:-0}
	local before
	before=$(awk '/^unreferenced object/ { if (v) c++; v = 0 } /\[vtpu\]/ { v = 1 }
		      END { if (v) c++; print c + 0 }' "$res/kmemleak.before.txt" 2>/dev/null)
	n=$((n + ${before:-0}))
	if [ "$n" -gt 0 ]; then
		echo "check-debug: kmemleak: $n in $res/kmemleak*.txt:"
		head -n 60 "$res/kmemleak.txt" | sed 's/^/  /'
	fi
	if [ ! -f "$res/kmemleak.txt" ]; then
		echo "check-debug: no kmemleak report in $res (the guest never got that far)"
	fi
	reports[kmemleak]=$((reports[kmemleak] + n))
}

# A problem run.sh reported that the phase's own counts do not show.
vm_problems() {
	local res=$1
	if [ -s "$res/.vm/problems" ] || [ -f "$res/.vm/timed-out" ] ||
	   [ ! -f "$res/.vm/done" ]; then
		echo "check-debug: the VM run in $res had problems:"
		sed 's/^/  /' "$res/.vm/problems" 2>/dev/null
		[ ! -f "$res/.vm/timed-out" ] || echo "  timed out"
		return 0
	fi
	return 1
}

fresh_results() {
	rm -rf "$dbg/results/$1"
	mkdir -p "$dbg/results/$1"
	echo "$dbg/results/$1"
}

# The kselftests under debug-guest.sh WRAP_ARGS; sets ks_p ks_f ks_s ks_rc.
run_kselftests() {
	local phase=$1 res
	shift
	res=$(fresh_results "$phase")
	tools/vm/run.sh "${vm_opts[@]}" ${phase_opts[@]+"${phase_opts[@]}"} --results "$res" \
		--module "$module" --params "$params" --timeout 5400 \
		--wrap "$top/tools/vm/debug-guest.sh $*" -- \
		env "${envs[@]}" "$top/tests/kselftest/run.sh" --timeout 1800 \
		"$build/tests/kselftest" 2>&1 | tee "$logs/$phase.log"
	ks_rc=${PIPESTATUS[0]}
	read -r ks_p ks_f ks_s < <(grep -E '^kselftest: [0-9]+ passed' "$logs/$phase.log" |
		tail -1 | sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/')
	ks_p=${ks_p:-0} ks_f=${ks_f:-0} ks_s=${ks_s:-0}
	count_reports "$res" "$injected_phase"
	phase_res=$res
}

# The fuzzer, if there is one yet, with KFUZZ_ARGS $2 and debug-guest.sh
# options after that; sets fz_rc (127: no fuzzer).
run_fuzzer() {
	local phase=$1 kfuzz_args=$2 res
	shift 2
	res=$(fresh_results "$phase")
	phase_res=$res
	if [ ! -x tools/fuzz-kernel.sh ] ||
	   ! make -s BUILD="$build" "$build/bin/vtpu-kfuzz" >"$logs/$phase.build.log" 2>&1; then
		echo "fuzz: not available"
		fz_rc=127
		return
	fi
	KFUZZ_ARGS=$kfuzz_args tools/fuzz-kernel.sh "$build" "$module" "$params" "$fuzz_seconds" \
		"${vm_opts[@]}" ${phase_opts[@]+"${phase_opts[@]}"} --results "$res" \
		--timeout $((fuzz_seconds * 4 + 900)) \
		--wrap "$top/tools/vm/debug-guest.sh $*" 2>&1 | tee "$logs/$phase.log"
	fz_rc=${PIPESTATUS[0]}
	count_reports "$res" "$injected_phase"
}

# --- phases -----------------------------------------------------------------

phase_opts=() injected_phase=
echo "=== kselftest (debug kernel)"
run_kselftests kselftest
passed=$((passed + ks_p)) failed=$((failed + ks_f)) skipped=$((skipped + ks_s))
if [ "$ks_rc" != 0 ] && [ "$ks_f" = 0 ]; then
	vm_problems "$phase_res" || echo "check-debug: kselftest exited with status $ks_rc"
	failed=$((failed + 1))
fi

# --no-defer-taskrun: 6.12's io_uring trips its own lockdep assertion
# (io_lockdep_assert_cq_locked from io_ring_exit_work) when a
# DEFER_TASKRUN ring closes with commands in flight while its task lives;
# that warning would fail every run and hide vtpu's own reports.
echo "=== fuzz (debug kernel, $fuzz_seconds s)"
run_fuzzer fuzz --no-defer-taskrun
if [ "$fz_rc" = 0 ]; then
	passed=$((passed + 1))
else
	[ "$fz_rc" = 127 ] || vm_problems "$phase_res" ||
		echo "check-debug: fuzz exited with status $fz_rc"
	failed=$((failed + 1))
fi

# Injected -ENOMEM makes tests and fuzz operations fail: the workload's
# status does not count, the kernel's behaviour does. debug-guest.sh
# injects, not the fuzzer's own --failslab: that one fails only its own
# task's slab allocations, this one vtpu's wherever they run (workers
# too) and its page allocations.
# kmemleak's own bookkeeping is allocated with vtpu's code on the stack
# too: a failed scan area only makes it scan the whole object (a failed
# object would fall back to its pool, or disable it: that still fails).
# A failed vmalloc or page allocation dumps the stack: count_reports
# tells those dumps from the others, run.sh cannot.
phase_opts=(--allow-dmesg 'kmemleak: Cannot allocate a scan area'
	    --allow-dmesg 'Call Trace:')
injected_phase=1
echo "=== failslab (debug kernel, $failslab_percent % of vtpu's allocations fail)"
before=$((reports[kasan] + reports[ubsan] + reports[lockdep] + reports[kmemleak] + reports[other]))
run_fuzzer failslab "--enomem-ok --no-defer-taskrun" --failslab "$failslab_percent"
if [ "$fz_rc" = 127 ]; then
	echo "failslab: running the kselftests instead"
	run_kselftests failslab --failslab "$failslab_percent"
fi
# A phase that injected nothing tested nothing (a filter that misses
# vtpu's text, say): that fails too.
injected=$(grep -ac 'FAULT_INJECTION: forcing a failure' "$phase_res/dmesg.txt" 2>/dev/null)
echo "failslab: ${injected:-0} allocations failed on purpose"
after=$((reports[kasan] + reports[ubsan] + reports[lockdep] + reports[kmemleak] + reports[other]))
if vm_problems "$phase_res" || [ "${injected:-0}" = 0 ] || [ "$after" != "$before" ]; then
	failed=$((failed + 1))
else
	passed=$((passed + 1))
fi

# --- verdict ----------------------------------------------------------------

echo "=== summary ($(($(date +%s) - start)) s)"
echo "kasan: ${reports[kasan]} reports"
echo "lockdep: ${reports[lockdep]} reports"
echo "ubsan: ${reports[ubsan]} reports"
echo "kmemleak: ${reports[kmemleak]} leaks"
echo "other: ${reports[other]} splats"
echo "check-debug: $passed passed, $failed failed, $skipped skipped"
total=$((reports[kasan] + reports[ubsan] + reports[lockdep] + reports[kmemleak] + reports[other]))
[ "$failed" = 0 ] && [ "$total" = 0 ]
