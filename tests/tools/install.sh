#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `make install` as a packager runs it, into a DESTDIR: file modes, the
# multiarch LIBDIR, a pkg-config file that links statically, a static
# library that exports only vtpu_* (an application's own `codegen` must
# not collide), the README example built against the installed files,
# and `make uninstall` leaving nothing behind. The userspace goals must
# not run tools/deps.sh (no kernel packages needed).
set -uo pipefail
build=${1:?usage: install.sh BUILD}
top=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
n=0 bad=0
check() {	# check "what" command...
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >/tmp/vtpu-install-check.$$ 2>&1; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		sed 's/^/#   /' /tmp/vtpu-install-check.$$ | head -20
		bad=1
	fi
}

d=$(mktemp -d)
trap 'rm -rf "$d" /tmp/vtpu-install-check.$$' EXIT
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
libdir=/usr/lib/$arch
dest=$d/root

# With an empty BUILD, any goal that includes config.mk remakes it by
# running tools/deps.sh, even under -n: the userspace goals must not.
check "make -n userspace/install/uninstall do not run tools/deps.sh" \
	bash -c "for g in userspace install uninstall; do
		make -n -C '$top' BUILD='$d/empty' \$g > '$d/dry' 2>&1 || { cat '$d/dry'; exit 1; }
		if [ -e '$d/empty/config.mk' ] || grep -q deps.sh '$d/dry'; then
			echo \"make \$g ran tools/deps.sh\"; exit 1; fi; done"
check "make install" \
	make -s -C "$top" BUILD="$build" install DESTDIR="$dest" PREFIX=/usr \
	LIBDIR="$libdir" MANDIR=/usr/share/man
mode() { [ "$(stat -c %a "$1")" = "$2" ] || { echo "$1: mode $(stat -c %a "$1"), want $2"; return 1; }; }
check "shared library installed 0644 in the multiarch LIBDIR" \
	mode "$dest$libdir/libvtpu.so.0.1" 644
check "static library installed 0644" mode "$dest$libdir/libvtpu.a" 644
check "libvtpu.so.0 and libvtpu.so link to the library" \
	bash -c "[ \"\$(readlink '$dest$libdir/libvtpu.so.0')\" = libvtpu.so.0.1 ] &&
		 [ \"\$(readlink '$dest$libdir/libvtpu.so')\" = libvtpu.so.0.1 ]"
for t in vtpu-run vtpu-compile vtpu-smi; do
	check "$t installed 0755" mode "$dest/usr/bin/$t" 755
done
check "uAPI header installed" test -f "$dest/usr/include/vtpu/drm/vtpu_accel.h"
check "license texts installed with COPYING" \
	bash -c "for f in COPYING GPL-2.0 MIT Linux-syscall-note; do
		grep -q . '$dest/usr/share/doc/vtpu/'\$f || exit 1; done"

export PKG_CONFIG_PATH=$dest$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
pc() { pkg-config "$@" vtpu; }
check "vtpu.pc names the multiarch libdir" \
	bash -c "pkg-config --variable=libdir vtpu | grep -qx '$dest$libdir'"
check "pkg-config --static --libs has every library a static link needs" \
	bash -c 'l=$(pkg-config --static --libs vtpu); for x in -lvtpu -ldrm -luring -lyajl -lxxhash -lprotobuf-c -lm; do
		case " $l " in *" $x "*) ;; *) echo "missing $x in: $l"; exit 1;; esac; done'
check "pkg-config --cflags names only vtpu's include directory" \
	bash -c 'f=$(echo $(pkg-config --cflags vtpu)); [ "$f" = "-I$PKG_CONFIG_SYSROOT_DIR/usr/include" ] || { echo "cflags: $f"; exit 1; }'

# Every global the static library defines is vtpu_*.
check "libvtpu.a defines no global outside vtpu_*" \
	bash -c "! nm -g --defined-only '$dest$libdir/libvtpu.a' | awk 'NF == 3 { print \$3 }' | grep -v '^vtpu_'"

# An application with its own codegen(), type_size and onnx__* links
# libvtpu.a statically and parses an ONNX buffer (protobuf-c inside).
cat > "$d/app.c" <<'C'
#include <stdio.h>
#include <vtpu/vtpu.h>
#include <vtpu/vtpu_compiler.h>
int codegen(void) { return 42; }
int type_size = 7;
void onnx__model_proto__init(void *p) { (void)p; }
int main(void)
{
	struct vtpu_graph *g = NULL;
	char err[128] = "";
	int ret = vtpu_onnx_parse("\x08\x07", 2, &g, err, sizeof(err));

	vtpu_graph_free(g);
	printf("%d %d %s\n", codegen() + type_size, ret < 0, err[0] ? "err" : "none");
	return 0;
}
C
static_libs() { pc --static --libs | sed 's/-lvtpu\b/-l:libvtpu.a/'; }
check "an application with its own codegen/type_size/onnx__* links libvtpu.a" \
	bash -c "cc -std=c11 -Wall -Werror $(pc --cflags) -o '$d/app' '$d/app.c' $(static_libs)"
check "... and runs, calling the library's ONNX parser" \
	bash -c "'$d/app' | grep -qx '49 1 err'"
check "the README example builds against the installed files" \
	bash -c "cc -std=c11 -Wall -Werror $(pc --cflags) -o '$d/readme' \
		'$build/examples/readme_mlp.c' $(pc --libs) -Wl,-rpath,'$dest$libdir'"
check "... and runs on the host backend" \
	bash -c "VTPU_BACKEND=host '$d/readme' | grep -q '^host:'"

check "make uninstall" make -s -C "$top" BUILD="$build" uninstall DESTDIR="$dest" \
	PREFIX=/usr LIBDIR="$libdir" MANDIR=/usr/share/man
check "uninstall leaves no file behind" \
	bash -c "[ -z \"\$(find '$dest' -type f -o -type l)\" ] || find '$dest' -type f -o -type l"
exit $bad
