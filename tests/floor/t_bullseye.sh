#!/usr/bin/env bash
# timeout: 1500
# Debian bullseye's releases of libbpf (0.3), libcurl (7.74), jansson (2.13),
# hwloc (2.4), libmicrohttpd (0.9.72), inih (53) and libsystemd (247) are as
# old as edgeq's floor or older. Fetch their .debs (tools/floor/fetch-debs: a
# private apt state, nothing installed), build edgeq, its tools and the unit
# tests against those headers and libraries (tools/floor/pkg-config-root),
# let the probes pick the fallbacks on their own, then run the unit and cli
# suites with those libraries loaded (LD_LIBRARY_PATH), and, where BPF works
# here, load the BPF programs through libbpf 0.3.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/lib.sh"
cd "$EDGEQ_TOP"
base=${O:-build}/floor-bullseye
root=$PWD/$base/root
BO=$base/build
lib=$root/usr/lib/$(gcc -dumpmachine | sed 's/-pc-/-/')

out=$(tools/floor/fetch-debs "$base" 2>&1)
rc=$?
[ $rc -eq 77 ] && skip_all "$(tail -n 1 <<<"$out")"
[ $rc -eq 0 ] || { echo "$out"; check "fetch bullseye's .debs" false; summary; }
check "bullseye's libraries unpacked under $base/root" test -f "$lib/libbpf.so.0"

floor_make "edgeq builds against bullseye's headers" "$BO" \
	PKG_CONFIG="$PWD/tools/floor/pkg-config-root $root"
cfg=$BO/edgeq_config.h
# the probes themselves found the older APIs (nothing forced)
check "not a FLOOR=1 build" grep -qx '#define EDGEQ_FLOOR 0' "$cfg"
for h in CURLOPT_PROTOCOLS_STR LIBBPF_OPTS BTF_LOAD_VMLINUX; do
	check "probe chose the fallback for $h" grep -qx "#define EDGEQ_HAVE_$h 0" "$cfg"
done

export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
deps=$(ldd "$BO/edgeq")
for so in libbpf.so.0 libcurl.so.4 libjansson.so.4 libhwloc.so.15 libmicrohttpd.so.12 libinih.so.1 libsystemd.so.0; do
	check "edgeq loads bullseye's $so" grep -q "$so => $lib/" <<<"$deps"
done
check "edgeq runs with them" "$BO/edgeq" --version

if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] && [ -f "$BO/bpf/pressure.skel.h" ]; then
	st=$("$BO/edgeq" status --json 2>&1)
	src=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["source"], d["fallback_reason"])' <<<"$st" 2>&1)
	# libbpf 0.3 predates BTF kinds newer kernels emit (float, decl/type
	# tags, enum64): there it must fall back with the reason, not crash on an
	# ERR_PTR (what libbpf < 1.0 returns for errors)
	echo "libbpf 0.3 on $(uname -r): $src"
	check "libbpf 0.3: BPF loads, or falls back saying why ($src)" \
		grep -qE '^bpf|^psi .*BTF' <<<"$src"
fi

# the suites, with the old libraries loaded
sl=$T/suites.log
env -u EDGEQ -u EDGEQ_TEST_TMP O="$BO" tests/run unit cli >"$sl" 2>&1
rc=$?
grep -E '^(FAIL|SKIP)' "$sl"
line=$(tail -n 1 "$sl")
echo "unit + cli against bullseye's libraries: $line"
check "unit and cli suites pass against bullseye's libraries ($line)" test $rc -eq 0
summary
