#!/usr/bin/env bash
# timeout: 90
# Real reclaim: a process in a memory-limited cgroup (v1 memory.limit_in_bytes,
# or v2 memory.max) fills page cache past the limit; the monitor reports the
# memcg reclaim stalls with their durations, system-wide always, and as its
# own cgroup's when it runs inside that cgroup.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../pressure/fake.sh"
if [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	base=/sys/fs/cgroup/memory limit=memory.limit_in_bytes tasks=tasks
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	base=/sys/fs/cgroup limit=memory.max tasks=cgroup.procs
	grep -qw memory /sys/fs/cgroup/cgroup.subtree_control ||
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
else
	skip_all "no memory cgroup controller (v1 or v2) to limit a process"
fi
cgs=()
cleanup() { for c in "${cgs[@]}"; do rmdir "$c" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
mkcg() { local c=$base/edgeq-test-$$-$1; mkdir "$c" && echo 32M >"$c/$limit" && cgs+=("$c") && echo "$c"; }
fill() { # CG: 96 MiB of page cache written then read back, charged to CG
	sh -c "echo \$\$ >'$1/$tasks'; dd if=/dev/zero of='$T/fill' bs=1M count=96 status=none; \
		dd if='$T/fill' of=/dev/null bs=1M status=none; rm -f '$T/fill'"
}
last() { grep -v '^$' "$1" | tail -1 >"$1.last"; echo "$1.last"; }

# 1. the monitor inside the limited cgroup: own == the stalls
cg=$(mkcg in) || skip_all "cannot create a memory cgroup under $base"
sh -c "echo \$\$ >'$cg/$tasks'; exec '$EDGEQ' status --json --watch --duration 5 --stall-warn-us 1 --rate-burst 100000" >"$T/in.json" 2>"$T/err" &
wp=$!
sleep 1.5
fill "$cg"
wait $wp
check "monitor in the cgroup ran (exit 0)" test $? -eq 0 || cat "$T/err"
L=$(last "$T/in.json")
check "source bpf" test "$(jget "$L" 'd["source"]')" = bpf
mc=$(jget "$L" 'd["memory"]["reclaim"]["memcg"]["count"]')
check "memcg reclaim stalls seen system-wide ($mc)" test "$mc" -gt 0
check "their summed duration is > 0 ns ($(jget "$L" 'd["memory"]["reclaim"]["memcg"]["total_ns"]'))" \
	test "$(jget "$L" 'd["memory"]["reclaim"]["memcg"]["total_ns"] > 0')" = True
own=$(jget "$L" 'd["memory"]["reclaim"]["own"]["count"]')
check "the own-cgroup count matches ($own of $mc)" test "$own" -gt 0 -a "$own" -le "$mc"
check "own max stall > 0 ns" test "$(jget "$L" 'd["memory"]["reclaim"]["own"]["max_ns"] > 0')" = True
check "system total includes own" test "$(jget "$L" 'd["memory"]["reclaim"]["system"]["total_ns"] >= d["memory"]["reclaim"]["own"]["total_ns"]')" = True
python3 - "$T/in.json" >"$T/ev" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    for e in json.loads(l).get("new_events", []):
      if e["kind"] == "reclaim":
        print(e["value"], e["flags"], e["name"])
PY
check "reclaim events reach --watch ($(wc -l <"$T/ev"))" test -s "$T/ev"
check "each carries its duration in ns (> 0)" awk '$1 <= 0 { exit 1 }' "$T/ev"
check "dd's stalls are named after it" grep -q ' dd$' "$T/ev"
check "dd's stalls are flagged memcg + own cgroup (flags 3)" awk '$3 == "dd" && $2 != 3 { exit 1 }' "$T/ev"

# 2. the monitor outside: counted system-wide, not as its own
cg=$(mkcg out)
"$EDGEQ" status --json --watch --duration 5 --stall-warn-us 1 --rate-burst 100000 >"$T/out.json" 2>"$T/err" &
wp=$!
sleep 1.5
fill "$cg"
wait $wp
L=$(last "$T/out.json")
mc=$(jget "$L" 'd["memory"]["reclaim"]["memcg"]["count"]')
check "monitor outside: memcg stalls seen system-wide ($mc)" test "$mc" -gt 0
check "monitor outside: none counted as its own" test "$(jget "$L" 'd["memory"]["reclaim"]["own"]["count"]')" = 0
"$EDGEQ" status >"$T/human"
check "human status prints the reclaim line" grep -q '^reclaim: system' "$T/human"
summary
