#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Boot the Debian kernel in QEMU with the host root shared read-only over
# 9p, optionally load a module, run one command in the guest and return its
# exit status. See tools/vm/README.md.
#
# Usage: tools/vm/run.sh [options] -- COMMAND [ARGS...]
#   --kver V         kernel version (default: KVER from BUILD/config.mk)
#   --kernel IMAGE   boot this bzImage instead of /boot/vmlinuz-V (e.g. the
#                    debug kernel of tools/vm/debug-kernel.sh); without a
#                    /lib/modules tree for its version, 9p, virtio and
#                    what the module needs must be built in
#   --append ARGS    more kernel command line (e.g. kmemleak=on)
#   --wrap "CMD.."   run the command as CMD.. COMMAND (split on spaces):
#                    a guest-side wrapper that runs after insmod and
#                    before rmmod (tools/vm/debug-guest.sh)
#   --module PATH    module to insmod before and rmmod after the command
#                    (.ko, .ko.xz or .ko.zst); omitted: no module
#   --params "K=V.." module parameters
#   --timeout SECS   kill the VM after SECS (default 300); exit 124
#   --results DIR    writable dir shared with the guest as $VTPU_RESULTS
#                    (default: a fresh BUILD/vm/results.<pid>, removed
#                    when the run succeeds unless --keep)
#   --keep           keep the default results dir
#   --no-slab-debug  boot without slub_debug and KFENCE (benchmarks: they
#                    measure the kernel users run; tests keep the checks)
#   --build DIR      build dir for the cached initramfs (default: build)
#   --allow-dmesg RE ignore dmesg lines matching this extended regexp
#                    (repeatable) for tests that provoke a splat on purpose
#
# Exit status: the command's; 1 if the harness found a problem (module
# failed to load or unload, kernel splat in dmesg, guest crashed), even
# when the command succeeded; 124 on timeout; 2 on usage errors.
# VTPU_VM_ACCEL=tcg|kvm overrides the automatic accelerator choice;
# VTPU_VM_TRACE=1 traces the guest-side script (set -x, with timestamps).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

# Kernel messages that fail a run (extended regexps, matched against the
# guest's dmesg). This is the only list; README.md refers to it. A bare
# "Call Trace:" catches stack dumps that come without one of the headers
# above it (dump_stack() from a driver, lockdep, ...).
DMESG_BAD=(
	'BUG:'
	'WARNING:'
	'Oops'
	'Kernel panic'
	'general protection fault'
	'hung task|hung_task|blocked for more than'
	'soft lockup|hard LOCKUP'
	'rcu: .*(self-)?detected stalls?'
	'UBSAN:'
	'KASAN:'
	'kmemleak'
	'Call Trace:'
)

usage() {
	sed -n '/^# Usage:/,/^# VTPU_VM_TRACE/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

die() {
	echo "vm: $*" >&2
	exit 2
}

mode=run
kver=
image=
append=
wrap=
module=
params=
timeout=300
results=
keep=
slab_debug=1
build=$repo/build
allow=()
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=${2?}; shift 2 ;;
	--kernel) image=${2?}; shift 2 ;;
	--append) append=${2?}; shift 2 ;;
	--wrap) wrap=${2?}; shift 2 ;;
	--module) module=${2?}; shift 2 ;;
	--params) params=${2?}; shift 2 ;;
	--timeout) timeout=${2?}; shift 2 ;;
	--results) results=${2?}; shift 2 ;;
	--build) build=${2?}; shift 2 ;;
	--keep) keep=1; shift ;;
	--no-slab-debug) slab_debug=; shift ;;
	--allow-dmesg) allow+=("${2?}"); shift 2 ;;
	--shell) mode=shell; shift ;;	# what tools/vm/shell.sh passes
	--) shift; break ;;
	-h|--help) usage ;;
	*) echo "vm: unknown option $1" >&2; usage ;;
	esac
done
if [ "$mode" = run ]; then
	[ $# -gt 0 ] || { echo "vm: no command given" >&2; usage; }
	[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds, not '$timeout'"
else
	[ $# -eq 0 ] || die "shell.sh takes no command"
	if ! [ -t 0 ] || ! [ -t 1 ]; then die "shell.sh needs a terminal"; fi
fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
vmdir=$build/vm
mkdir -p "$vmdir"

# The version a bzImage announces: the boot protocol's kernel_version
# field (at 0x20e) is the offset, less 0x200, of a NUL-terminated string
# that starts with it.
image_version() {
	local off
	off=$(od -An -tu2 -j $((0x20e)) -N2 "$1" | tr -d ' ')
	[ -n "$off" ] && [ "$off" != 0 ] || return 1
	dd if="$1" bs=1 skip=$((off + 0x200)) count=128 status=none |
		tr '\0' '\n' | sed -n '1s/ .*//p'
}

if [ -n "$image" ]; then
	[ -r "$image" ] || die "cannot read --kernel $image"
	image=$(cd "$(dirname "$image")" && pwd)/$(basename "$image")
	[ -n "$kver" ] || kver=$(image_version "$image") ||
		die "$image is not a bzImage (no kernel version in it)"
elif [ -z "$kver" ]; then
	[ -f "$build/config.mk" ] || die "no --kver and no $build/config.mk (run tools/deps.sh)"
	kver=$(sed -n 's/^KVER *:= *//p' "$build/config.mk")
	[ -n "$kver" ] || die "no KVER in $build/config.mk"
fi
kernel=${image:-/boot/vmlinuz-$kver}
[ -r "$kernel" ] || die "cannot read $kernel (is linux-image-$kver installed?)"
# A kernel of our own has no modules tree: what the guest needs is built in.
modtree=
if [ -f "/lib/modules/$kver/modules.dep" ]; then
	modtree=1
elif [ -z "$image" ]; then
	die "no /lib/modules/$kver/modules.dep"
fi

modname=
if [ -n "$module" ]; then
	[ -f "$module" ] || die "module not found: $module"
	# The name rmmod needs; modinfo reads .ko.xz too.
	modname=$(modinfo -F name "$module" 2>/dev/null) || true
	if [ -z "$modname" ]; then
		modname=$(basename "$module")
		modname=${modname%%.ko*}
		modname=${modname//-/_}
	fi
fi

# --- initramfs: busybox, /init and the 9p modules, cached by content ------

busybox=$(command -v busybox) || die "busybox not found (install busybox-static)"
# The initramfs has no libc: a dynamically linked busybox cannot run there.
if ldd "$busybox" >/dev/null 2>&1; then
	die "$busybox is dynamically linked; install busybox-static"
fi

# What the 9p mounts need, in load order, from this kernel's modules.dep
# (virtio_pci and the virtio core are built into Debian's kernel: those
# show up as "builtin" and are skipped).
kmods=()
if [ -n "$modtree" ]; then
	mapfile -t kmods < <(modprobe -S "$kver" --show-depends -a 9p 9pnet_virtio |
			     awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
	[ ${#kmods[@]} -gt 0 ] || die "modprobe --show-depends found no 9p modules for $kver"
else
	# Fail here rather than with a guest that cannot mount its root,
	# when the image sits in its build tree (which lists its built-ins).
	builtin=$(dirname "$kernel")/../../../modules.builtin
	if [ -f "$builtin" ]; then
		for m in 9p 9pnet_virtio virtio_pci; do
			grep -q "/$m.ko$" "$builtin" ||
				die "$kernel has no modules tree and $m is not built in"
		done
	fi
fi

initrd=$vmdir/initramfs-$kver.cpio
# Keyed on everything that goes in, and on this script (which lays it out).
# Contents only: the same script reached by another path is the same input.
key=$({ echo "$kver" "${kmods[@]+"${kmods[@]}"}"; cat "$busybox" "$here/init" \
	"${BASH_SOURCE[0]}" ${kmods[@]+"${kmods[@]}"}; } | sha256sum)
if [ ! -f "$initrd" ] || [ "$(cat "$initrd.key" 2>/dev/null)" != "$key" ]; then
	echo "vm: building $initrd" >&2
	stage=$(mktemp -d "$vmdir/initramfs.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage/bin" "$stage/lib/modules"
	cp "$busybox" "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"	# for /init's #! line
	install -m 755 "$here/init" "$stage/init"
	# Decompress here: busybox insmod passes the file to init_module(),
	# which (unlike finit_module()) cannot take a compressed module.
	i=0
	: >"$stage/lib/modules/order"
	for m in ${kmods[@]+"${kmods[@]}"}; do
		name=$(printf '%02d-%s.ko' $i "$(basename "${m%.ko*}")")
		case $m in
		*.xz) xz -dc "$m" ;;
		*.zst) zstd -dc "$m" ;;
		*.gz) gzip -dc "$m" ;;
		*) cat "$m" ;;
		esac >"$stage/lib/modules/$name"
		echo "$name" >>"$stage/lib/modules/order"
		i=$((i + 1))
	done
	# Uncompressed: the kernel unpacks it faster than it would gunzip.
	(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) >"$initrd.$$"
	mv "$initrd.$$" "$initrd"
	echo "$key" >"$initrd.key.$$"
	mv "$initrd.key.$$" "$initrd.key"
	rm -rf "$stage"
	trap - EXIT
fi

# Common QEMU command line. -nodefaults drops the default NIC (whose
# option ROM SeaBIOS would load) and VGA; the serial console is wired
# explicitly below. quiet+loglevel=4 keep the console to errors so the
# command's output stays readable; the full log goes to dmesg.txt. panic=-1
# with -no-reboot makes a panicking guest end QEMU at once.
# Debian's kernel also gets SLUB's consistency checks, red zones, poisoning
# and owner tracking, and KFENCE sampling every allocation it can: cheap
# use-after-free and overflow detection (a debug kernel has KASAN instead).
cmdline="console=ttyS0 quiet loglevel=4 panic=-1"
[ -n "$image" ] || [ -z "$slab_debug" ] ||
	cmdline+=" slub_debug=FZPU kfence.sample_interval=1"
cmdline+=${append:+ $append}
qemu_base=(qemu-system-x86_64 -nodefaults -no-user-config -display none
	   -cpu max -m 2G -smp 2 -no-reboot
	   -kernel "$kernel" -initrd "$initrd")

# --- accelerator: TCG unless KVM demonstrably works ------------------------

# Nested KVM on the CI machines has /dev/kvm but cannot run a guest (it
# fails or hangs). So KVM is used only after a probe boot with it reached
# userspace in time; the verdict is cached per kernel/QEMU/host kernel.
kvm_works() {
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	local cache=$vmdir/kvm-ok id verdict rc=0
	id="$(uname -r) / $(qemu-system-x86_64 --version | sed -n 1p) / $kver"
	if [ -f "$cache" ] && [ "$(sed -n 2p "$cache")" = "$id" ]; then
		[ "$(sed -n 1p "$cache")" = yes ]
		return
	fi
	echo "vm: probing KVM (cached in $cache)" >&2
	# (The braces silence bash's "Aborted" when QEMU dies on an assert.)
	{ timeout -k 5 15 "${qemu_base[@]}" -accel kvm -serial stdio \
		-append "$cmdline vm_probe" </dev/null >"$cache.log.$$" 2>&1; } 2>/dev/null || rc=$?
	if [ $rc -eq 0 ] && grep -q vm-probe-ok "$cache.log.$$"; then
		verdict=yes
	else
		verdict=no
		echo "vm: KVM does not work here (exit $rc; see $cache.log), using TCG" >&2
	fi
	mv "$cache.log.$$" "$cache.log"
	printf '%s\n%s\n' "$verdict" "$id" >"$cache.$$"
	mv "$cache.$$" "$cache"
	[ $verdict = yes ]
}

case ${VTPU_VM_ACCEL:-auto} in
tcg|kvm) accel=$VTPU_VM_ACCEL ;;
auto) if kvm_works; then accel=kvm; else accel=tcg; fi ;;
*) die "VTPU_VM_ACCEL must be tcg, kvm or auto" ;;
esac

# --- results dir and the files the guest reads ------------------------------

own_results=
if [ -z "$results" ]; then
	results=$vmdir/results.$$
	rm -rf "$results"
	own_results=1
fi
mkdir -p "$results"
results=$(cd "$results" && pwd -P)
v=$results/.vm
rm -rf "$v" "$results/dmesg.txt" "$results/console.log"
mkdir "$v"

printf '%s\n' "$results" >"$v/path"
cp "$here/guest.sh" "$v/guest.sh"
# The module is copied into the share: the run keeps the module it started
# with even if a rebuild replaces the file meanwhile.
vm_module=
if [ -n "$module" ]; then
	cp "$module" "$v/"
	vm_module=$v/$(basename "$module")
fi
rows='' cols=''
[ "$mode" = shell ] && read -r rows cols < <(stty size 2>/dev/null || echo "")
{
	printf 'VM_MODE=%q\n' "$mode"
	printf 'VM_RESULTS=%q\n' "$results"
	printf 'VM_CWD=%q\n' "$(pwd -P)"
	printf 'VM_MODULE=%q\n' "$vm_module"
	printf 'VM_MODNAME=%q\n' "$modname"
	printf 'VM_PARAMS=%q\n' "$params"
	printf 'VM_TERM=%q\n' "${TERM:-dumb}"
	printf 'VM_TRACE=%q\n' "${VTPU_VM_TRACE:-}"
	printf 'VM_ROWS=%q\nVM_COLS=%q\n' "$rows" "$cols"
} >"$v/conf"
if [ -n "$wrap" ]; then
	# shellcheck disable=SC2206 # split on spaces, as documented
	w=($wrap)
	set -- "${w[@]}" "$@"
fi
# The command goes in a file, quoted, rather than on the kernel command
# line: no length limit, no parsing by the kernel, any characters.
{ printf 'exec'; printf ' %q' "$@"; printf '\n'; } >"$v/cmd.sh"

# QEMU option values escape a comma by doubling it.
qres=${results//,/,,}
# shellcheck disable=SC2054 # the commas are QEMU's
qemu=("${qemu_base[@]}" -accel "$accel" -append "$cmdline"
      -fsdev local,id=h,path=/,security_model=none,readonly=on,multidevs=remap
      -device virtio-9p-pci,fsdev=h,mount_tag=host
      -fsdev "local,id=r,path=$qres,security_model=none"
      -device virtio-9p-pci,fsdev=r,mount_tag=results)

# --- boot ------------------------------------------------------------------

start=$(date +%s.%N)
qrc=0
if [ "$mode" = shell ]; then
	# Foreground with the terminal: signal=off hands Ctrl-C to the guest;
	# the monitor multiplexed on the console gives Ctrl-A X to quit.
	"${qemu[@]}" \
		-chardev "stdio,id=con,mux=on,signal=off,logfile=$qres/console.log" \
		-serial chardev:con -mon chardev=con,mode=readline || qrc=$?
else
	# Debian's kernel under TCG very rarely dies while it patches its own
	# text during early boot (an int3 Oops in swapper, seen once in about
	# fifty boots), before anything of ours runs. guest.sh leaves "booted"
	# as its first act: without it, the boot itself failed, and one more
	# boot is honest. Anything later counts against the run.
	for attempt in 1 2; do
	qrc=0
	# In the background so a watchdog can enforce the timeout. The
	# console goes straight to our stdout, and to a log. (The UART moves
	# ~130 KB/s under TCG; a virtio console measured ten times slower,
	# hvc polls. Big outputs belong in $VTPU_RESULTS.) Its input is an
	# empty pipe, not /dev/null: a /dev/null that something replaced with
	# a regular file fed the guest console its contents (soft lockups and
	# RCU stalls in the guest: 870,427 UART interrupts in 90 s).
	"${qemu[@]}" -chardev "stdio,id=con,logfile=$qres/console.log" \
		-serial chardev:con < <(:) &
	qpid=$!
	# shellcheck disable=SC2317 # called from the traps
	interrupted() {
		kill -TERM "$qpid" 2>/dev/null
		wait "$qpid"
		echo "vm: interrupted" >&2
		exit "$1"
	}
	trap 'interrupted 130' INT
	trap 'interrupted 143' TERM
	# Polls once a second so it ends soon after QEMU does.
	(
		for ((i = 0; i < timeout; i++)); do
			sleep 1
			kill -0 $qpid 2>/dev/null || exit 0
		done
		: >"$v/timed-out"
		kill -TERM $qpid 2>/dev/null
		sleep 5
		kill -KILL $qpid 2>/dev/null
	) >/dev/null 2>&1 &
	wpid=$!
	wait $qpid || qrc=$?
	kill $wpid 2>/dev/null || true
	wait $wpid 2>/dev/null || true
	trap - INT TERM
	if [ "$attempt" = 1 ] && [ ! -f "$v/booted" ] &&
	   [ ! -f "$v/timed-out" ] && grep -qE 'Oops|panic' "$results/console.log"; then
		mv "$results/console.log" "$results/console.boot-failure.log"
		echo "vm: the guest kernel died during boot, before guest.sh ran (log: $results/console.boot-failure.log); booting once more" >&2
		continue
	fi
	break
	done
fi
elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

# --- verdict ---------------------------------------------------------------

failed=
status=
# Also in <results>/.vm/problems: callers that judge the command's status
# themselves (a fault-injected run) still learn of every problem.
report() {
	echo "vm: $*" >&2
	printf '%s\n' "$*" >>"$v/problems"
	failed=1
}

# Kernel splats. dmesg.txt is complete; without it (crash, timeout) the
# console log still has whatever was printed at loglevel <= 4.
log=$results/dmesg.txt
[ -f "$log" ] || log=$results/console.log
bad=$(IFS='|'; echo "${DMESG_BAD[*]}")
hits=$(grep -aE -- "$bad" "$log" 2>/dev/null || true)
for re in ${allow[@]+"${allow[@]}"}; do
	hits=$(printf '%s\n' "$hits" | grep -avE -- "$re" || true)
done
if [ -n "$hits" ]; then
	report "kernel problems in $log:"
	printf '%s\n' "$hits" | sed -n '1,50s/^/vm: dmesg: /p' >&2
	# The first splat whole, its stack included: a CI log may be all
	# there is to go on.
	first=$(printf '%s\n' "$hits" | head -n 1)
	at=$(grep -anF -m 1 -- "$first" "$log" | cut -d: -f1)
	if [ -n "$at" ]; then
		echo "vm: the first of them, as logged:" >&2
		sed -n "${at},$((at + 45))s/^/vm: | /p" "$log" >&2
	fi
fi

if [ -f "$v/timed-out" ]; then
	echo "vm: timeout after $timeout s; console log: $results/console.log" >&2
	exit 124
fi

if [ -s "$v/errors" ]; then
	while IFS= read -r line; do report "$line"; done <"$v/errors"
fi
if [ -f "$v/status" ]; then
	status=$(cat "$v/status")
	[ -f "$v/done" ] || report "the guest crashed after the command (exit $status)"
elif [ $qrc -ne 0 ]; then
	report "QEMU failed (exit $qrc) before the guest reported an exit status"
elif [ "$mode" = shell ] && [ -z "$hits" ] && [ ! -s "$v/errors" ]; then
	report "QEMU quit before the guest shell ended (Ctrl-A X?)"
elif [ ! -s "$v/errors" ]; then
	report "the guest never reported an exit status (kernel panic or crash?)"
fi

if [ -n "$failed" ]; then
	echo "vm: FAILED (${status:+command exit $status, }$accel, ${elapsed}s); results kept in $results" >&2
	exit 1
fi
echo "vm: exit $status ($accel, ${elapsed}s)" >&2
if [ -n "$own_results" ] && [ -z "$keep" ] && [ "$status" = 0 ]; then
	rm -rf "$results"
fi
exit "$status"
