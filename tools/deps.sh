#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Install what vtpu needs to build and test, idempotently: Debian packages
# from the apt sources the machine already has, then the kselftest headers
# and checkpatch extracted from the matching linux-source into a cache.
#
# Usage: tools/deps.sh [BUILD_DIR]     (default: build)
#        tools/deps.sh --userspace     only what `make userspace` and
#                                      `make install` need: no kernel
#                                      packages, no config.mk
#
# Writes BUILD_DIR/config.mk with KVER, KDIR and the cache paths the
# Makefile includes. The kernel version is the newest
# linux-headers-6.12.*+deb12-amd64 apt offers, resolved each run, never
# hard-coded. When everything is present this takes well under a second.
set -euo pipefail

userspace=
if [ "${1:-}" = --userspace ]; then
	userspace=1
	shift
fi
build=${1:-build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
cache=$build/cache
mkdir -p "$cache"

if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive

pkgs_base=(build-essential bc bison flex libelf-dev kmod xz-utils cpio
	   pkg-config busybox-static qemu-system-x86 liburing-dev libdrm-dev
	   perl libopenblas-dev libxxhash-dev clang libyajl-dev libonnx-dev
	   libonnx-testdata protobuf-c-compiler libprotobuf-c-dev
	   python3-torch python3-torchvision python3-onnx
	   python3-dev python3-numpy python3-pytest)

# The userspace build alone: compiler, libraries, protobuf-c, Python.
pkgs_user=(build-essential pkg-config liburing-dev libdrm-dev libxxhash-dev
	   libyajl-dev libonnx-dev protobuf-c-compiler libprotobuf-c-dev
	   python3-dev python3-numpy)
# `make deb` and its checks: debhelper, dh-dkms, dh-python, lintian.
pkgs_deb=(debhelper dkms dh-dkms dh-python fakeroot lintian dpkg-dev)
pkgs_base+=("${pkgs_deb[@]}")

have_pkg() {
	dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing() {
	local p out=()
	for p in "$@"; do have_pkg "$p" || out+=("$p"); done
	echo "${out[@]:-}"
}

apt_updated=
apt_update() {
	[ -n "$apt_updated" ] && return
	echo "deps: apt-get update" >&2
	$sudo apt-get update -qq >&2
	apt_updated=1
}

apt_install() {
	[ $# -gt 0 ] || return 0
	apt_update
	echo "deps: installing $*" >&2
	$sudo apt-get install -y -qq --no-install-recommends "$@" >&2
}

# Package lists a machine image was built with go stale: when an install
# fails, refresh them once and let the caller resolve versions again.
apt_install_or_refresh() {
	[ $# -gt 0 ] || return 0
	apt_install "$@" && return 0
	[ -n "$apt_forced_update" ] && return 1
	apt_forced_update=1
	echo "deps: install failed; refreshing the package lists" >&2
	$sudo apt-get update -qq >&2
	return 2
}
apt_forced_update=

# The 6.12 flavour to build against: the version the meta-package points to
# is the newest one apt offers. A cached answer (keyed on the apt lists'
# mtime) keeps repeat runs free of apt-cache calls.
resolve_kver() {
	local stamp lists
	lists=$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo 0)
	stamp=$cache/kver.$lists
	if [ -s "$stamp" ]; then cat "$stamp"; return; fi
	local v
	v=$(apt-cache depends linux-headers-6.12-amd64 2>/dev/null |
	    sed -n 's/.*Depends: linux-headers-\(6\.12\.[0-9]*+deb12-amd64\)$/\1/p' | head -1)
	if [ -z "$v" ]; then
		apt_update
		v=$(apt-cache depends linux-headers-6.12-amd64 2>/dev/null |
		    sed -n 's/.*Depends: linux-headers-\(6\.12\.[0-9]*+deb12-amd64\)$/\1/p' | head -1)
	fi
	[ -n "$v" ] || { echo "deps: no linux-headers-6.12.*+deb12-amd64 in the apt sources" >&2; exit 1; }
	rm -f "$cache"/kver.*
	echo "$v" > "$stamp"
	echo "$v"
}

if [ -n "$userspace" ]; then
	# shellcheck disable=SC2046
	apt_install_or_refresh $(missing "${pkgs_user[@]}") ||
		apt_install $(missing "${pkgs_user[@]}")
	exit 0
fi

# shellcheck disable=SC2046
apt_install_or_refresh $(missing "${pkgs_base[@]}") ||
	apt_install $(missing "${pkgs_base[@]}")

# The kernel packages: headers to build against, the image the VM boots
# (with its modules), and the source of the same version for kselftest
# and checkpatch.
kernel_packages() {
	kver=$(resolve_kver)
	kpkgs=("linux-headers-$kver" "linux-image-$kver")
	src_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null || true)
	if [ -z "$src_ver" ]; then
		apt_update
		src_ver=$(apt-cache show "linux-headers-$kver" | sed -n 's/^Version: //p' | head -1)
	fi
	if ! have_pkg linux-source-6.12 ||
	   [ "$(dpkg-query -W -f='${Version}' linux-source-6.12)" != "$src_ver" ]; then
		kpkgs+=("linux-source-6.12=$src_ver")
	fi
	m=()
	for p in "${kpkgs[@]}"; do
		case $p in
		*=*) m+=("$p") ;;
		*) have_pkg "$p" || m+=("$p") ;;
		esac
	done
	# The image's postinst regenerates an initrd we never use; harmless.
	apt_install_or_refresh "${m[@]}"
}
rc=0
kernel_packages || rc=$?
if [ "$rc" = 2 ]; then
	kernel_packages
elif [ "$rc" != 0 ]; then
	exit "$rc"
fi

# kselftest headers and checkpatch, from the very source the headers match.
ksrc=$cache/linux-source-${src_ver//[^A-Za-z0-9.+-]/_}
if [ ! -f "$ksrc/.done" ]; then
	tarball=$(ls /usr/src/linux-source-6.12.tar.*)
	top=$(basename "$tarball")
	top=${top%.tar.*}
	rm -rf "$ksrc" && mkdir -p "$ksrc"
	echo "deps: extracting kselftest and checkpatch from $tarball" >&2
	tar xf "$tarball" -C "$ksrc" --strip-components=1 \
		"$top/tools/testing/selftests/kselftest_harness.h" \
		"$top/tools/testing/selftests/kselftest.h" \
		"$top/scripts/checkpatch.pl" \
		"$top/scripts/spelling.txt" \
		"$top/scripts/const_structs.checkpatch" \
		"$top/Documentation/dev-tools/checkpatch.rst"
	touch "$ksrc/.done"
fi

kdir=${KDIR:-/lib/modules/$kver/build}
[ -d "$kdir" ] || { echo "deps: KDIR=$kdir does not exist" >&2; exit 1; }

cat > "$build/config.mk.tmp" <<EOF
# Written by tools/deps.sh; do not edit.
KVER := $kver
DEPS_KDIR := $kdir
KSFT_DIR := $ksrc/tools/testing/selftests
CHECKPATCH := $ksrc/scripts/checkpatch.pl
EOF
if ! cmp -s "$build/config.mk.tmp" "$build/config.mk" 2>/dev/null; then
	mv "$build/config.mk.tmp" "$build/config.mk"
else
	rm -f "$build/config.mk.tmp"
fi
