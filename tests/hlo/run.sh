#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The HLO corpus suite: every tests/hlo/corpus/*.hlo through vtpu's HLO
# frontend and compiler, checked against tests/hlo/hlo_ref.py, an
# independent NumPy interpreter of XLA's semantics.
#
#  1. hlo_ref.py writes the inputs and expected outputs of each module
#     (BUILD/hlo/<name>/ref). Its exit status 2 means it cannot evaluate
#     the module: SKIP, with its reason.
#  2. vtpu-run -b host on those inputs (BUILD/hlo/<name>/host). A module
#     the frontend refuses is a FAIL ("unsupported: ..."): the corpus
#     measures how much of real-world HLO compiles and agrees. The verdict
#     on the outputs is hlo_ref.py --compare: per-output tolerances from
#     meta.txt, shapes checked, NaN matching NaN (vtpu-run's own "match"
#     has one tolerance for all outputs and calls NaN a mismatch).
#  3. The modules that agree on the host run again with -b accel in QEMU
#     with vtpu.ko loaded (one boot for all), and each output must be the
#     host's byte for byte (BUILD/hlo/<name>/accel).
#
# Prints one line a module, "PASS|FAIL|SKIP|XFAIL|XPASS <name>[: reason]", writes
# BUILD/hlo/table.md and ends with "hlo: N passed, N failed, N skipped";
# a module passes when both backends agree (host only with --host-only).
# Exits 1 if anything failed.
#
# Usage: tests/hlo/run.sh BUILD [MODULE ["PARAMS"]] [--host-only]
#                         [--corpus DIR] [--vm-params "K=V ..."]
#   BUILD MODULE "PARAMS" as tools/conformance.sh takes them (MODULE
#   defaults to driver/vtpu.ko, PARAMS to none; --vm-params sets PARAMS).
#   --host-only   skip the VM (quick iteration)
#   --corpus DIR  the modules (default tests/hlo/corpus)
#   --out DIR     where results go (default BUILD/hlo; emptied first)
# PYTHON (default /usr/bin/python3) runs hlo_ref.py, on the host only.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/hlo

usage() {
	sed -n '/^# Usage:/,/^# PYTHON/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

pos=() host_only='' corpus=$here/corpus params='' out=''
while [ $# -gt 0 ]; do
	case $1 in
	--host-only) host_only=1; shift ;;
	--corpus) corpus=${2?}; shift 2 ;;
	--out) out=${2?}; shift 2 ;;
	--vm-params) params=${2?}; shift 2 ;;
	-h|--help) usage ;;
	-*) echo "hlo: unknown option $1" >&2; usage ;;
	*) pos+=("$1"); shift ;;
	esac
done
if [ ${#pos[@]} -lt 1 ] || [ ${#pos[@]} -gt 3 ]; then usage; fi
build=$(cd "${pos[0]}" 2>/dev/null && pwd) || { echo "hlo: no build dir ${pos[0]}"; exit 2; }
module=${pos[1]:-$top/driver/vtpu.ko}
[ ${#pos[@]} -lt 3 ] || params=${pos[2]}
py=${PYTHON:-/usr/bin/python3}
ref_py=$here/hlo_ref.py
run=$build/bin/vtpu-run
out=${out:-$build/hlo}
mkdir -p "$out" && out=$(cd "$out" && pwd)
table=$out/table.md

# A fresh output tree, but keep BUILD/hlo itself: it is the VM's results
# dir below, mounted writable at the same path in the guest.
mkdir -p "$out"
find "$out" -mindepth 1 -maxdepth 1 -exec rm -rf {} +

pass=0 fail=0 skip=0
declare -A compiles host_ok accel_ok reason
names=()

# The opcodes a module uses: what follows a shape ("] op(", "} op(",
# ") op("), parameters left out. The table's fallback for modules without
# a "// vtpu: constructs" line.
constructs() {
	local c
	c=$(sed -n 's|.*//[[:space:]]*vtpu:[[:space:]]*constructs[[:space:]]*||p' "$1" | head -1)
	if [ -n "$c" ]; then
		echo "$c"
		return
	fi
	sed 's|//.*||' "$1" | grep -oE '[]})] *[a-z][a-z0-9-]*\(' |
		sed -E 's/^[]})] *//; s/\($//' | grep -vx parameter | sort -u |
		paste -sd, - | sed 's/,/, /g'
}

# First line of vtpu-run's complaint, without its "vtpu-run: FILE: ".
complaint() {
	local l
	l=$(grep '^vtpu-run: ' "$1" | grep -v '^vtpu-run: note:' | head -1)
	[ -n "$l" ] || l=$(grep -v '^$' "$1" | tail -1)
	sed -E 's|^vtpu-run: ||; s|^[^ ]*\.hlo: ||' <<<"$l"
}

# corpus/known-failures: "NAME: why" lines, modules vtpu is known not to
# run yet. Such a module's failure is an XFAIL, counted with the skipped
# (it did not pass); one that passes is an XPASS, a failure, so the list
# never claims more than is true.
declare -A known
if [ -f "$corpus/known-failures" ]; then
	while IFS= read -r l; do
		case $l in '#'*|'') continue ;; esac
		known[${l%%:*}]=${l#*: }
	done <"$corpus/known-failures"
fi
xfail=0

verdict() {	# NAME PASS|FAIL|SKIP [REASON]: one line, counted
	local v=$2
	if [ -n "${known[$1]:-}" ]; then
		case $v in
		FAIL) v=XFAIL ;;
		PASS) v=XPASS; set -- "$1" "$2" "listed in known-failures: ${known[$1]}" ;;
		esac
	fi
	echo "$v $1${3:+: $3}"
	case $v in
	PASS) pass=$((pass + 1)) ;;
	FAIL|XPASS) fail=$((fail + 1)) ;;
	SKIP) skip=$((skip + 1)) ;;
	XFAIL) skip=$((skip + 1)) xfail=$((xfail + 1)) ;;
	esac
}

if ! [ -x "$run" ]; then
	echo "hlo: $run is not built"
	echo "hlo: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
shopt -s nullglob
mods=("$corpus"/*.hlo)
shopt -u nullglob
if [ ${#mods[@]} = 0 ]; then
	echo "hlo: no modules in $corpus"
	echo "hlo: 0 passed, 1 failed, 0 skipped"
	exit 1
fi

# --- reference and host backend ---------------------------------------------
start=$(date +%s)
host_pass=()
for m in "${mods[@]}"; do
	name=$(basename "$m" .hlo)
	names+=("$name")
	d=$out/$name
	mkdir -p "$d/ref" "$d/host"
	# The guest cannot see /tmp: the module goes next to its data, under
	# its own name (the reference's default input seed comes from it).
	cp "$m" "$d/$name.hlo"
	compiles[$name]=- host_ok[$name]=- accel_ok[$name]=-
	"$py" "$ref_py" "$d/$name.hlo" "$d/ref" >"$d/ref.log" 2>&1
	rc=$?
	if [ $rc = 2 ]; then
		reason[$name]="reference: $(sed -n 's/.*cannot evaluate: //p' "$d/ref.log" | head -1)"
		verdict "$name" SKIP "${reason[$name]}"
		continue
	elif [ $rc != 0 ]; then
		reason[$name]="reference failed: $(grep -v '^ ' "$d/ref.log" | tail -1)"
		verdict "$name" FAIL "${reason[$name]}"
		continue
	fi
	args=()
	# In parameter order: input_10 after input_9, not after input_1.
	n=0
	while [ -e "$d/ref/input_$n.npy" ]; do
		args+=(-i "$d/ref/input_$n.npy")
		n=$((n + 1))
	done
	n=0
	while [ -e "$d/ref/output_$n.npy" ]; do
		args+=(-e "$d/ref/output_$n.npy")
		n=$((n + 1))
	done
	# vtpu-run has one tolerance for all outputs: the loosest of meta.txt
	# (its report only; the verdict is --compare's, per output).
	read -r rtol atol < <(awk '{ if ($3 > r) r = $3; if ($4 > a) a = $4 }
		END { printf "%g %g\n", r, a }' "$d/ref/meta.txt")
	timeout 600 "$run" -b host -q --json "${args[@]}" --rtol "$rtol" \
		--atol "$atol" -o "$d/host" "$d/$name.hlo" >"$d/host.json" 2>"$d/host.log"
	rc=$?
	if ! grep -q '"outputs"' "$d/host.json"; then
		# It never ran: the frontend or compiler refused it.
		msg=$(complaint "$d/host.log")
		if [ $rc = 124 ]; then
			msg="timed out (600 s)"
		elif [ $rc = 2 ]; then
			msg="vtpu-run usage error: $msg"
		elif grep -qiE 'unsupported|not supported' <<<"$msg"; then
			msg="unsupported: $msg"
		else
			msg="error: $msg"
		fi
		compiles[$name]=no reason[$name]=$msg
		verdict "$name" FAIL "$msg"
		continue
	fi
	compiles[$name]=yes
	if cmp_out=$("$py" "$ref_py" --compare "$d/ref" "$d/host" 2>&1); then
		host_ok[$name]=yes
		if [ -n "$host_only" ]; then
			verdict "$name" PASS
		else
			host_pass+=("$name")
		fi
	else
		host_ok[$name]=no
		reason[$name]="host: $(head -1 <<<"$cmp_out")"
		verdict "$name" FAIL "${reason[$name]}"
	fi
done
echo "hlo: reference and host run took $(($(date +%s) - start)) s"

# --- accel backend, in the VM -------------------------------------------------
accel_fail=0
if [ -z "$host_only" ] && [ ${#host_pass[@]} -gt 0 ]; then
	start=$(date +%s)
	why=
	if ! [ -x "$top/tools/vm/run.sh" ]; then
		why="no tools/vm/run.sh"
	elif ! [ -f "$module" ]; then
		why="no kernel module $module"
	fi
	if [ -z "$why" ]; then
		script=$out/accel.sh
		{
			echo "# Generated by tests/hlo/run.sh: the accel half, in the guest."
			echo 'rc=0'
			for name in "${host_pass[@]}"; do
				d=$out/$name
				cmd=(timeout 600 "$run" -b accel -q --json)
				n=0
				while [ -e "$d/ref/input_$n.npy" ]; do
					cmd+=(-i "$d/ref/input_$n.npy")
					n=$((n + 1))
				done
				cmd+=(-o "$d/accel" "$d/$name.hlo")
				printf 'mkdir -p %q && ' "$d/accel"
				printf '%q ' "${cmd[@]}"
				printf '>%q 2>%q || { echo %q; rc=1; }\n' "$d/accel.json" \
					"$d/accel.log" "hlo: $name: vtpu-run -b accel failed"
			done
			# shellcheck disable=SC2016 # expanded in the guest
			echo 'exit $rc'
		} >"$script"
		# BUILD/hlo is the results dir: the guest writes the accel
		# outputs beside the host's.
		"$top/tools/vm/run.sh" --build "$build" --module "$module" \
			--params "$params" --results "$out" --timeout 900 -- \
			sh "$script" >"$out/vm.log" 2>&1
		vm=$?
		[ $vm = 0 ] || { tail -5 "$out/vm.log"; why="the VM run failed (status $vm, $out/vm.log)"; }
	fi
	for name in "${host_pass[@]}"; do
		d=$out/$name
		if ! grep -q '"backend": "accel"' "$d/accel.json" 2>/dev/null; then
			msg=${why:-no accel run}
			[ -s "$d/accel.log" ] && msg="$msg: $(complaint "$d/accel.log")"
			accel_ok[$name]=no reason[$name]="accel: $msg"
			verdict "$name" FAIL "accel: $msg"
			accel_fail=$((accel_fail + 1))
			continue
		fi
		bad=
		for f in "$d"/host/output_*.npy; do
			cmp -s "$f" "$d/accel/$(basename "$f")" || { bad=$(basename "$f" .npy); break; }
		done
		if [ -n "$bad" ]; then
			accel_ok[$name]=no reason[$name]="accel differs from host in $bad"
			verdict "$name" FAIL "accel differs from host in $bad"
			accel_fail=$((accel_fail + 1))
		else
			accel_ok[$name]=yes
			verdict "$name" PASS
		fi
	done
	# Every module agreed yet the VM run failed (a splat in dmesg, rmmod
	# trouble): one more failure, as tools/conformance.sh counts it.
	if [ "${why#the VM}" != "$why" ] && [ $accel_fail = 0 ]; then
		fail=$((fail + 1))
		echo "hlo: $why"
	fi
	echo "hlo: accel run (VM) took $(($(date +%s) - start)) s"
fi

# --- table --------------------------------------------------------------------
{
	echo "| module | constructs | compiles? | agrees host? | agrees accel? |"
	echo "|---|---|---|---|---|"
	for name in "${names[@]}"; do
		a=${accel_ok[$name]}
		[ -n "$host_only" ] && [ "${host_ok[$name]}" = yes ] && a="not run"
		note=${reason[$name]:+ (${reason[$name]//|/\\|})}
		printf '| %s | %s | %s | %s | %s%s |\n' "$name" \
			"$(constructs "$out/$name/$name.hlo" | sed 's/|/\\|/g')" \
			"${compiles[$name]}" "${host_ok[$name]}" "$a" "$note"
	done
} >"$table"
echo "hlo: table in $table"
# The goal: 90 % of the corpus compiles and agrees on every backend run.
total=${#names[@]}
echo "hlo: $pass of $total modules compile and agree ($((pass * 100 / total)) %); $xfail known failures (corpus/known-failures)"
if [ $((pass * 10)) -lt $((total * 9)) ]; then
	echo "hlo: below the goal of 90 %"
	fail=$((fail + 1))
fi
echo "hlo: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
