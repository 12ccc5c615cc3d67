#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The global symbols of OBJECT that the version map exports, one a line:
# the list `objcopy --keep-global-symbols` takes to give the static
# library the shared library's interface (everything else made local, so
# an application's own `codegen` or `onnx__*` does not collide with ours).
# Usage: tools/public-symbols.sh MAP OBJECT
set -euo pipefail
map=${1:?usage: public-symbols.sh MAP OBJECT} obj=${2:?usage: public-symbols.sh MAP OBJECT}

# The map's "global:" patterns (globs such as vtpu_client_*) as one regex.
re=$(sed -e 's|/\*.*\*/||' "$map" | awk '
	/global:/ { on = 1; next }
	/local:/ { on = 0; next }
	on && match($0, /[A-Za-z0-9_*]+;/) {
		p = substr($0, RSTART, RLENGTH - 1)
		gsub(/\*/, "[A-Za-z0-9_]*", p)
		printf "%s%s", sep, p; sep = "|"
	}')
[ -n "$re" ] || { echo "public-symbols.sh: no global patterns in $map" >&2; exit 1; }
nm --defined-only -g "$obj" | awk '{ print $NF }' | grep -E "^($re)\$" | sort -u
