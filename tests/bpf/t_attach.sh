#!/usr/bin/env bash
# timeout: 60
# Load and attach every program this kernel supports: each probe whose
# tracepoint the kernel has (btf_trace_* in its BTF, or the edgeq module's
# events in tracefs) is attached; the others are reported, not fatal.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
"$EDGEQ" status --json >"$T/s.json" 2>"$T/err"
check "status --json exits 0 as root" test $? -eq 0 || cat "$T/err"
. "$(dirname "$0")/../pressure/fake.sh"
check "source is bpf" test "$(jget "$T/s.json" 'd["source"]')" = bpf
check "20 tracepoint programs reported" test "$(jget "$T/s.json" 'len(d["probes"])')" = 20
bpftool btf dump file /sys/kernel/btf/vmlinux >"$T/btf" 2>/dev/null
tracefs=""
for r in /sys/kernel/tracing /sys/kernel/debug/tracing; do [ -d $r/events ] && tracefs=$r && break; done
python3 - "$T/s.json" "$T/btf" "$tracefs" >"$T/probes" <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
btf = open(sys.argv[2]).read()
tr = sys.argv[3]
for p in d["probes"]:
    cat, ev = p["tracepoint"].split(":")
    if cat == "edgeq":
        have = os.path.exists(f"{tr}/events/edgeq/{ev}") if tr else os.path.exists("/sys/module/edgeq")
    else:
        have = f"'btf_trace_{ev}'" in btf
    print(p["tracepoint"], "present" if have else "absent",
          "attached" if p["attached"] else "not-attached", p["error"] or "-")
PY
cat "$T/probes"
bad=$(awk '$2 == "present" && $3 != "attached"' "$T/probes")
check "every tracepoint the kernel has is attached${bad:+ (not: $bad)}" test -z "$bad"
bad=$(awk '$2 == "absent" && $3 == "attached"' "$T/probes")
check "nothing claims to attach to a missing tracepoint" test -z "$bad"
bad=$(awk '$2 == "absent" && $4 == "-"' "$T/probes")
check "each missing tracepoint has an error" test -z "$bad"
echo "attached: $(grep -c ' attached' "$T/probes"), not attached: $(grep -c not-attached "$T/probes")"
for tp in thermal:thermal_temperature vmscan:mm_vmscan_memcg_reclaim_begin vmscan:mm_vmscan_direct_reclaim_end; do
	check "$tp attached here" grep -q "^$tp present attached" "$T/probes"
done
# The links exist while a monitor runs, and go away with it. Other monitors
# (a running `edgeq serve`) may hold links too: count only the link ids that
# appear with this one.
ids() { bpftool -j link show 2>/dev/null | python3 -c '
import json, sys
for l in json.load(sys.stdin) or []:
    if l.get("type") == "raw_tracepoint":
        print(l["id"], l.get("tp_name", "?"))' | sort; }
ids >"$T/before"
"$EDGEQ" status --watch --json --duration 3 >/dev/null 2>&1 &
wp=$!
sleep 1.5
ids >"$T/during"
comm -13 "$T/before" "$T/during" >"$T/ours"
n=$(wc -l <"$T/ours")
na=$(grep -c ' attached' "$T/probes")
check "bpftool shows $na new raw_tracepoint links while it runs (saw $n)" test "$n" -ge "$na"
wait $wp
for i in 1 2 3 4 5 6 7 8 9 10; do # link release may be deferred on a busy box
	ids >"$T/after"
	n=$(comm -12 "$T/ours" "$T/after" | wc -l)
	[ "$n" -eq 0 ] && break
	sleep 0.5
done
check "its links are gone after it exits (left: $n)" test "$n" -eq 0
summary
