#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Second stage of the vtpu test VM. /init runs this with the host's bash,
# chrooted into the (read-only) host root, from <results>/.vm/ where run.sh
# put it next to conf (settings) and cmd.sh (the command, quoted).
#
# Protocol with run.sh, all files in <results>/.vm/:
#   errors   one line per harness failure (modprobe, insmod, cd, rmmod)
#   status   the command's exit status (absent: it never ran or finished)
#   booted   written first: the guest kernel booted and ran this script
#   done     written last, after dmesg was saved: the guest ended cleanly
# plus <results>/dmesg.txt, which run.sh scans for kernel splats.
#
# No "set -e": every step must run (rmmod, dmesg) even after a failure.
set -u

vm=${BASH_SOURCE[0]%/*}
# shellcheck source=/dev/null
. "$vm/conf"
# The kernel booted: run.sh retries only boots that never got here.
: >"$vm/booted"

# VTPU_VM_TRACE=1 on the host: trace this script with timestamps.
if [ -n "${VM_TRACE:-}" ]; then
	PS4='+ ${EPOCHREALTIME} '
	set -x
fi

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=${VM_TERM:-dumb}
# What tests may want to know about the setup they run in.
export VTPU_RESULTS=$VM_RESULTS VTPU_PARAMS=$VM_PARAMS VTPU_MODULE=$VM_MODULE
# Writable scratch: the host root, /tmp included, is read-only here.
export TMPDIR=/dev/shm

fail() {
	echo "vm: $*" >&2
	printf '%s\n' "$*" >>"$vm/errors"
}

finish() {
	dmesg >"$VM_RESULTS/dmesg.txt" 2>&1 || fail "cannot save dmesg"
	sync
	: >"$vm/done"
	sync
	exit 0
}

# The serial console turns \n into \r\n; keep the command's output clean
# for logs on the host (kernel messages still get \r\n, which is harmless).
# The setting sticks because /init keeps the console open.
# shellcheck disable=SC2153 # VM_MODE comes from conf
[ "$VM_MODE" = run ] && stty -onlcr </dev/console 2>/dev/null

loaded=
read -r osrelease </proc/sys/kernel/osrelease
if [ -n "$VM_MODULE" ] && [ ! -d "/lib/modules/$osrelease" ]; then
	# A kernel of our own (run.sh --kernel) has no modules tree: what
	# the module needs is built in, or insmod below says what is missing.
	:
elif [ -n "$VM_MODULE" ]; then
	# The DRM core and shmem helper are required, and so are the module's
	# own hard dependencies (modinfo), or insmod fails. gpu-sched and
	# drm_exec are what vtpu is expected to use; if they are missing, the
	# insmod below says precisely what is wrong, so only note it here.
	# Two modprobe runs, not one per module: each exec costs under TCG.
	deps=$(modinfo -F depends "$VM_MODULE" 2>/dev/null | tr ',' ' ')
	# shellcheck disable=SC2086
	modprobe -a drm drm_shmem_helper $deps
	for m in drm drm_shmem_helper $deps; do
		[ -d "/sys/module/${m//-/_}" ] || fail "modprobe $m failed"
	done
	modprobe -a -q gpu-sched drm_exec
	for m in gpu_sched drm_exec; do
		[ -d "/sys/module/$m" ] || echo "vm: note: modprobe $m failed; continuing" >&2
	done
fi
if [ -n "$VM_MODULE" ]; then
	# What the kernel says about this insmod: the dmesg lines after these.
	n=$(dmesg | wc -l)
	# $VM_PARAMS is deliberately split into separate key=value words.
	# shellcheck disable=SC2086
	if insmod "$VM_MODULE" $VM_PARAMS; then
		loaded=1
		# The kernel only warns about (and ignores) unknown parameters;
		# a mistyped parameter must not silently test the defaults.
		unknown=$(dmesg | tail -n +$((n + 1)) | grep "unknown parameter")
		[ -z "$unknown" ] || fail "insmod ${VM_MODULE##*/} $VM_PARAMS: $unknown"
	else
		fail "insmod ${VM_MODULE##*/}${VM_PARAMS:+ $VM_PARAMS} failed (see above)"
		dmesg | tail -n +$((n + 1)) | sed 's/^/vm:   /' >&2
	fi
fi

if [ -s "$vm/errors" ]; then
	: # the module is not (fully) there: running the command is pointless
elif ! cd "$VM_CWD" 2>/dev/null; then
	fail "cannot cd to $VM_CWD in the guest"
elif [ "$VM_MODE" = shell ]; then
	# A real tty (not /dev/console) as controlling terminal gives the shell
	# job control and Ctrl-C. The serial line cannot report the host
	# window size, so run.sh passed it along.
	tty=/dev/ttyS0
	[ -n "${VM_ROWS:-}" ] && stty rows "$VM_ROWS" cols "$VM_COLS" <$tty
	cat >/dev/shm/.vm-bashrc <<-'EOF'
		[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc
		[ -f ~/.bashrc ] && . ~/.bashrc
		PS1='vtpu-vm:\w# '
	EOF
	echo "vm: guest shell; 'exit' or Ctrl-D powers off, Ctrl-A X kills QEMU"
	[ -n "$loaded" ] && echo "vm: $VM_MODNAME loaded${VM_PARAMS:+ ($VM_PARAMS)}; \$VTPU_RESULTS is $VM_RESULTS"
	# shellcheck disable=SC2094 # one tty, both directions
	setsid -c -w bash --rcfile /dev/shm/.vm-bashrc -i <$tty >$tty 2>&1
	echo $? >"$vm/status"
else
	bash "$vm/cmd.sh" </dev/null
	echo $? >"$vm/status"
fi

# Processes that have a DRM or accel device open: who blocks rmmod. One
# find, not a readlink per fd: every exec is slow under TCG.
device_users() {
	local fd pid comm
	find /proc/[0-9]*/fd -lname '/dev/accel/*' -o -lname '/dev/dri/*' 2>/dev/null |
	while IFS= read -r fd; do
		pid=${fd#/proc/}
		pid=${pid%%/*}
		read -r comm <"/proc/$pid/comm" 2>/dev/null
		echo "pid $pid ($comm) has $(readlink "$fd") open"
	done
}

if [ -n "$loaded" ] && ! rmmod "$VM_MODNAME" 2>/dev/null; then
	# Closing the last file can leave DRM fences or deferred work holding
	# a module reference for a moment; a real leak outlasts two seconds.
	# Polling refcnt costs no exec (slow under TCG), unlike rmmod.
	end=$((${EPOCHREALTIME/./} + 2000000))
	while read -r ref <"/sys/module/$VM_MODNAME/refcnt" && [ "$ref" != 0 ] &&
	      [ "${EPOCHREALTIME/./}" -lt $end ]; do
		sleep 0.1
	done 2>/dev/null
	if [ -d "/sys/module/$VM_MODNAME" ] && ! rmmod "$VM_MODNAME"; then
		fail "rmmod $VM_MODNAME failed: refcnt $(cat "/sys/module/$VM_MODNAME/refcnt" 2>/dev/null)," \
		     "holders: $(cd "/sys/module/$VM_MODNAME/holders" 2>/dev/null && echo * | sed 's/^\*$/none/')"
		users=$(device_users)
		if [ -n "$users" ]; then
			while IFS= read -r u; do fail "  $u"; done <<<"$users"
		fi
	fi
fi

finish
