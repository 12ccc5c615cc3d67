#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Debian packages `make deb` leaves in BUILD/deb, installed on this
# machine as a user would install them: lintian finds no errors, apt
# installs them, DKMS builds vtpu.ko for every kernel with headers, the
# udev rule parses, the tools, pkg-config file, headers, libraries, man
# pages and Python module work from their installed places; then purging
# leaves nothing behind (no DKMS tree, no module, no files). Packages
# this script did not install (already there before) are left installed.
# TAP: "ok N - what" / "not ok N - what"; exits nonzero on a failure.
# No .debs in BUILD/deb: one skipped check.
# Usage: tests/tools/deb.sh [BUILD]    (or BUILD=... in the environment)
set -uo pipefail
build=${1:-${BUILD:-build}}
debdir=$build/deb
[ -d "$debdir" ] && debdir=$(cd "$debdir" && pwd)
n=0 bad=0
out=$(mktemp)
check() {	# check "what" command...
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >"$out" 2>&1; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		sed 's/^/#   /' "$out" | tail -20
		bad=1
	fi
}
skip() {	# skip "what" "why"
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}

shopt -s nullglob
debs=()
for f in "$debdir"/*.deb; do
	case $f in *-dbgsym_*) ;; *) debs+=("$f") ;; esac
done
if [ ${#debs[@]} = 0 ]; then
	echo "ok 1 - # SKIP no packages built (make deb)"
	echo "1..1"
	rm -f "$out"
	exit 0
fi

if [ "$(id -u)" = 0 ]; then sudo=
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=sudo
else sudo=no
fi
export DEBIAN_FRONTEND=noninteractive
# One run at a time installs and purges the packages on this machine.
exec 9>"${TMPDIR:-/tmp}/vtpu-deb-test.lock"
flock 9
d=$(mktemp -d)
pkgs=()
for f in "${debs[@]}"; do pkgs+=("$(dpkg-deb -f "$f" Package)"); done
installed() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}
# Only what this script installed is purged again.
ours=()
for p in "${pkgs[@]}"; do installed "$p" || ours+=("$p"); done
purge() {
	[ ${#ours[@]} -gt 0 ] || return 0
	$sudo dpkg --purge "${ours[@]}"
}
cleanup() {
	if [ -n "${did_install:-}" ]; then purge >/dev/null 2>&1; fi
	rm -rf "$d" "$out"
}
trap cleanup EXIT

check "packages: ${pkgs[*]}" bash -c '
	for p in vtpu-dkms libvtpu0 libvtpu-dev vtpu-tools python3-vtpu; do
		case " $* " in *" $p "*) ;; *) echo "missing $p"; exit 1 ;; esac
	done' _ "${pkgs[@]}"

changes=("$debdir"/*.changes)
if command -v lintian >/dev/null; then
	if [ ${#changes[@]} = 1 ]; then lin=("${changes[0]}"); else lin=("${debs[@]}"); fi
	check "lintian: no errors" lintian --fail-on error "${lin[@]}"
else
	skip "lintian: no errors" "lintian not installed"
fi

check "vtpu-dkms ships the driver, uAPI and dkms.conf under /usr/src/vtpu-0.1" \
	bash -c 'l=$(dpkg-deb -c "$1" | awk "{ print \$6 }")
		for f in dkms.conf driver/Kbuild driver/vtpu_drv.c driver/vtpu_drv.h \
			 uapi/drm/vtpu_accel.h; do
			grep -qx "./usr/src/vtpu-0.1/$f" <<<"$l" || { echo "no $f"; exit 1; }
		done
		! grep -E "\.(o|ko|mod\.c|cmd)$|modules.order|Module.symvers" <<<"$l"' \
	_ "$debdir"/vtpu-dkms_*.deb

if [ "$sudo" = no ]; then
	skip "install, use and purge the packages" "needs root"
	echo "1..$n"
	exit $bad
fi

# Several kernels may have headers; DKMS builds for each /lib/modules
# entry with a build directory (this machine's running kernel may have
# none: a container's host).
kvers=()
for k in /lib/modules/*; do
	[ -e "$k/build/Makefile" ] && kvers+=("$(basename "$k")")
done

did_install=1
check "apt-get install ${#debs[@]} packages" \
	$sudo apt-get install -y --no-install-recommends "${debs[@]}"

check "vtpu-run --version" bash -c 'vtpu-run --version | grep -q "^vtpu-run [0-9]"'
check "vtpu-compile --help" vtpu-compile --help
check "vtpu-smi --help" vtpu-smi --help
check "tools are in /usr/bin" bash -c '[ "$(command -v vtpu-run)" = /usr/bin/vtpu-run ]'

check "pkg-config --libs vtpu is -lvtpu" \
	bash -c '[ "$(pkg-config --libs vtpu | xargs)" = "-lvtpu" ]'
check "pkg-config --static --libs vtpu adds the private libraries" \
	bash -c 'l=$(pkg-config --static --libs vtpu)
		for x in -lvtpu -ldrm -luring -lyajl -lxxhash -lprotobuf-c; do
			grep -qw -- "$x" <<<"$l" || { echo "$l: no $x"; exit 1; }; done'
check "pkg-config --variable=libdir vtpu is the multiarch directory" \
	bash -c '[ "$(pkg-config --variable=libdir vtpu)" = "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)" ]'

cat > "$d/t.c" <<'EOF'
#include <stdio.h>
#include <vtpu/vtpu.h>
#include <vtpu/drm/vtpu_accel.h>

int main(void)
{
	struct vtpu_client_options o;
	struct vtpu_client *c;

	vtpu_client_options_init(&o);
	o.backend = VTPU_BACKEND_HOST;
	o.cache_dir = "";
	if (vtpu_client_create(&o, &c)) {
		fprintf(stderr, "%s\n", vtpu_client_error(NULL));
		return 1;
	}
	printf("%s %d\n", vtpu_client_backend(c), vtpu_client_device_count(c));
	vtpu_client_destroy(c);
	return 0;
}
EOF
check "a program builds with the installed headers and libvtpu.so, and runs" \
	bash -c 'cc -std=c11 -Wall -Werror -o "$1/t" "$1/t.c" \
		$(pkg-config --cflags --libs vtpu libdrm) &&
		ldd "$1/t" | grep -q "libvtpu.so.0 => /" && "$1/t"' _ "$d"
# libvtpu.a with what Libs.private names (shared: libyajl-dev has no
# libyajl.a).
check "the same program links libvtpu.a with pkg-config --static's libraries" \
	bash -c 'cc -std=c11 -Wall -Werror -o "$1/ts" "$1/t.c" \
		$(pkg-config --cflags libdrm) -Wl,-Bstatic -lvtpu -Wl,-Bdynamic \
		$(pkg-config --static --libs vtpu | sed "s/-lvtpu\>//") &&
		! ldd "$1/ts" | grep -q libvtpu && "$1/ts"' _ "$d"

# Debian's interpreter, not whatever python3 comes first on PATH.
check "/usr/bin/python3 imports vtpu from dist-packages" \
	bash -c 'cd / && env -u PYTHONPATH /usr/bin/python3 -c "
import vtpu, vtpu._vtpu
assert vtpu.__file__ == \"/usr/lib/python3/dist-packages/vtpu/__init__.py\", vtpu.__file__
"'

for m in vtpu-run vtpu-compile vtpu-smi libvtpu.3 vtpu.4; do
	case $m in *.[0-9]) sec=${m##*.} page=${m%.*} ;; *) sec=1 page=$m ;; esac
	check "man page $page($sec)" bash -c \
		'man -w "$1" "$2" | grep -q "^/usr/share/man/man$1/$2\.$1"' _ "$sec" "$page"
done

check "udev rule installed: /usr/lib/udev/rules.d/60-vtpu.rules" \
	grep -q 'SUBSYSTEM=="accel".*KERNELS=="vtpu\.\[0-9\]\*".*GROUP="render", MODE="0660"' \
	/usr/lib/udev/rules.d/60-vtpu.rules
# udevadm verify (systemd >= 254) checks a rules file alone; older udevadm
# test parses every rules file while simulating an event for any device
# and logs each invalid line with its file.
if udevadm verify --help >/dev/null 2>&1; then
	check "udev rule passes udevadm verify" \
		udevadm verify /usr/lib/udev/rules.d/60-vtpu.rules
elif [ -e /sys/class/mem/null ]; then
	# Errors read "FILE:LINE message". udevadm test makes /run/udev
	# when no udevd runs (a container): removed again if it did.
	[ -e /run/udev ] || rm_run_udev=1
	check "udev rule parses (udevadm test logs no error for it)" \
		bash -c 'o=$(udevadm test /sys/class/mem/null 2>&1); rc=$?
			grep "60-vtpu\.rules:[0-9]" <<<"$o" && exit 1
			grep -q "Reading rules file: .*/60-vtpu\.rules" <<<"$o" ||
				{ echo "udevadm test did not read 60-vtpu.rules"; exit 1; }
			[ $rc = 0 ] || { tail -5 <<<"$o"; exit 1; }'
	[ -n "${rm_run_udev:-}" ] && $sudo rm -rf /run/udev
else
	skip "udev rule parses" "no udevadm verify and no /sys/class/mem/null"
fi

if [ ${#kvers[@]} = 0 ]; then
	skip "dkms built vtpu.ko" "no kernel headers under /lib/modules/*/build"
fi
for k in "${kvers[@]}"; do
	check "dkms: vtpu/0.1 installed for $k" \
		bash -c 'dkms status vtpu/0.1 -k "$1" | grep -q "installed"' _ "$k"
	check "modinfo finds the DKMS vtpu.ko for $k" \
		bash -c 'modinfo -k "$1" -F filename vtpu | grep -q "/updates/dkms/vtpu.ko" &&
			modinfo -k "$1" -F parm vtpu | grep -q "^num_devices:"' _ "$k"
done

# The DKMS module in the QEMU guest (whose root is this machine's, read
# only): modprobe finds it under updates/dkms, and udevd, given the
# node's add event, applies the packaged rule to /dev/accel/accel0.
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
kver=$(sed -n 's/^KVER := //p' "$build/config.mk" 2>/dev/null)
if [ -z "$kver" ] || ! dkms status vtpu/0.1 -k "$kver" 2>/dev/null | grep -q installed; then
	skip "the DKMS vtpu.ko loads in the guest, udev gives its node render 0660" \
		"no DKMS build for the VM's kernel ${kver:-(no BUILD/config.mk)}"
else
	cat > "$d/guest.sh" <<'GUEST'
set -e
# The guest runs in a chroot of the host's root; udevadm refuses
# requests there unless told it is the system it manages.
export SYSTEMD_IGNORE_CHROOT=1
modprobe vtpu num_devices=1
m=$(modinfo -F filename vtpu)
echo "module: $m"
case $m in */updates/dkms/vtpu.ko*) ;; *) echo "not the DKMS module"; exit 1 ;; esac
before=$(stat -c '%G %a' /dev/accel/accel0)
echo "before udev: $before"
/lib/systemd/systemd-udevd --daemon --resolve-names=early
udevadm trigger --action=add --subsystem-match=accel
udevadm settle --timeout=30
after=$(stat -c '%G %a' /dev/accel/accel0)
echo "after udev: $after"
udevadm control --exit || true
rmmod vtpu
[ "$before" != "render 660" ] && [ "$after" = "render 660" ]
GUEST
	check "the DKMS vtpu.ko loads in the guest, udev gives its node render 0660" \
		"$top/tools/vm/run.sh" --build "$build" --kver "$kver" --timeout 300 \
		-- bash "$d/guest.sh"
	grep -E '^(module|before udev|after udev):' "$out" | sed 's/^/#   /' || true
fi

if [ ${#ours[@]} -gt 0 ]; then
	check "dpkg --purge ${ours[*]}" purge
	did_install=
	case " ${ours[*]} " in *" vtpu-dkms "*)
		check "purge left no DKMS tree, source or module behind" \
			bash -c '! dkms status vtpu 2>/dev/null | grep -q . &&
				[ ! -e /var/lib/dkms/vtpu ] && [ ! -e /usr/src/vtpu-0.1 ] &&
				! ls /lib/modules/*/updates/dkms/vtpu.ko* 2>/dev/null &&
				[ ! -e /usr/lib/udev/rules.d/60-vtpu.rules ]'
	esac
	check "purge removed the tools, libraries and Python module" \
		bash -c '! command -v vtpu-run && ! pkg-config --exists vtpu &&
			[ ! -e /usr/lib/python3/dist-packages/vtpu ] &&
			! ls /usr/lib/*/libvtpu.so* 2>/dev/null'
else
	skip "purge" "all the packages were installed before: left installed"
fi

echo "1..$n"
exit $bad
