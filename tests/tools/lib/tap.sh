# SPDX-License-Identifier: GPL-2.0-only
#
# TAP helpers the tools tests share (sourced, not run: tools-test.sh runs
# only tests/tools/*.sh). Set $tool to the binary that t runs first.
#
#   ok WHAT / not_ok WHAT WHY / skip WHAT WHY    one TAP line each
#   t RC WHAT ARGS...    runs $tool ARGS; out and err keep its output; a
#                        status other than RC is a failed check
#   has FILE ERE WHAT / hasnt FILE ERE WHAT      a line of the last t's
#                        out or err matches ERE / none does
#   usage_case WHAT ERE ARGS...   a usage error: exit 2, a message
#                        matching ERE, the "Try '... --help'." line, no
#                        help text and nothing on stdout
# $failed is 1 once a check failed: end the script with `exit $failed`.
n=0 failed=0
ok() {		# WHAT
	n=$((n + 1))
	echo "ok $n - $1"
}
not_ok() {	# WHAT WHY
	n=$((n + 1)) failed=1
	echo "not ok $n - $1"
	printf '#   %s\n' "$2"
	[ -f err ] && sed 's/^/#   stderr: /' err | head -5
}
skip() {	# WHAT WHY
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}
t() {		# RC WHAT ARGS...
	local want=$1 what=$2 rc
	shift 2
	"$tool" "$@" > out 2> err
	rc=$?
	if [ "$rc" != "$want" ]; then
		not_ok "$what" "exit status $rc, wanted $want"
		return 1
	fi
	return 0
}
has() {		# FILE ERE WHAT
	if grep -qE -- "$2" "$1"; then ok "$3"; else not_ok "$3" "no line matching /$2/ in $1"; fi
}
hasnt() {	# FILE ERE WHAT
	if grep -qE -- "$2" "$1"; then not_ok "$3" "a line matches /$2/ in $1"; else ok "$3"; fi
}
usage_case() {	# WHAT ERE ARGS...
	local what=$1 re=$2 name
	shift 2
	name=$(basename "$tool")
	t 2 "$what: exit 2" "$@" || return
	ok "$what: exit 2"
	if grep -qE -- "$re" err && grep -qx "Try '$name --help'." err &&
	   ! grep -q '^usage:' err && [ ! -s out ]; then
		ok "$what: says what was wrong, points at --help"
	else
		not_ok "$what: says what was wrong, points at --help" "wanted /$re/ and the Try line"
	fi
}
