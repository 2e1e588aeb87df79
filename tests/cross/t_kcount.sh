#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# timeout: 400
# tools/kcount: the instructions the NEON kernels (under qemu) and the AVX2
# ones (under valgrind) execute per weight byte, counted by difference of
# two kbench --insn runs, and the Orin figures profiles.ini derives from
# them. The counts barely move (timer reads, malloc), so they are checked
# closely: the same count within 1.5 % from another iteration count, token
# tiles cheaper per token than a matvec, and profiles.ini's cpu_stream_gbps what the kernels count today.
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
A=build-aarch64
[ -x $A/tools/kbench ] || skip_all "no aarch64 build: run 'make cross'"
command -v valgrind >/dev/null || skip_all "valgrind not installed (tools/install-deps)"
KB="$O/tools/kbench"

# kbench --insn refusals
"$KB" --insn -T Q4_0,Q8_0 -r 32 -c 256 -i 2 >/dev/null 2>"$T/e1"
check "--insn refuses two types (exit 2)" test $? -eq 2
check "  and says why" grep -q "one type" "$T/e1"
"$KB" --insn -T Q4_0 -r 32 -c 256 -i 0 >/dev/null 2>&1
check "--insn refuses -i 0 (exit 2)" test $? -eq 2
"$KB" --insn -T Q4_0 -r 32 -c 256 -i 1 -b 0 >/dev/null 2>"$T/e2"
check "--insn refuses 0 tokens with the shape" grep -q "bad shape 32 x 256 x 0" "$T/e2"
"$KB" --insn -T Q4_0 -r 32 -c 256 -i 1 -b 4 >"$T/ok"
check "--insn prints the product's figures" \
	grep -q "type Q4_0 rows 32 cols 256 tokens 4 layout file weight_bytes 4608 iters 1" "$T/ok"

# kcount refusals
tools/kcount -r 17 >/dev/null 2>&1
check "kcount refuses rows not a multiple of 16 (exit 2)" test $? -eq 2
tools/kcount -b x >/dev/null 2>&1
check "kcount refuses bad --tokens (exit 2)" test $? -eq 2
tools/kcount --arm64 /nonexistent --no-x86 >/dev/null 2>"$T/e3"
check "kcount with nothing to count exits 77" test $? -eq 77
check "  and names what it needs" grep -q "make cross" "$T/e3"
tools/kcount -T Q9_9 -b 1 -r 32 -c 256 -i 1 --no-x86 >/dev/null 2>"$T/e4"
check "kcount: an unknown type fails with kbench's message (exit 1)" \
	test $? -eq 1
check "  naming the type" grep -q "Q9_9" "$T/e4"

# counts on a small shape
tools/kcount -T Q4_0,Q4_K -b 1,4 -r 64 -c 1024 -i 2 --json >"$T/a.json" 2>"$T/a.err"
check "kcount counts Q4_0 and Q4_K (aarch64 and x86-64)" test $? -eq 0 || cat "$T/a.err"
tools/kcount -T Q4_0,Q4_K -b 1,4 -r 64 -c 1024 -i 3 --json >"$T/b.json" 2>>"$T/a.err"
python3 - "$T/a.json" "$T/b.json" >"$T/py.log" 2>&1 <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
def rows(d):
    return {(r["type"], r["tokens"], r["isa"], r["layout"]): r for r in d["rows"]}
ra, rb = rows(a), rows(b)
ok = True
def want(what, cond):
    global ok
    print(("ok " if cond else "FAIL ") + what)
    ok &= bool(cond)
for t in ("Q4_0", "Q4_K"):
    p1 = ra.get((t, 1, "aarch64", "packed"))
    p4 = ra.get((t, 4, "aarch64", "packed"))
    x1 = ra.get((t, 1, "x86-64", "file"))
    want(f"{t}: packed NEON rows counted", p1 and p4 and p1["kernels"] == "neon")
    want(f"{t}: AVX2 row counted", x1 and x1["kernels"] == "avx2" and x1["insn_per_byte"] > 0)
    if not (p1 and p4):
        continue
    want(f"{t}: the packed tile is where the instructions go ({p1['functions'][0]})",
         p1["functions"][0][0].startswith("tile") and p1["functions"][0][1] > 0.8)
    want(f"{t}: 4-token tiles cost less per token than a matvec "
         f"({p4['insn_per_byte'] / 4:.3f} < {p1['insn_per_byte']:.3f})",
         p4["insn_per_byte"] / 4 < p1["insn_per_byte"])
    want(f"{t}: SIMD instructions counted", p1["classes"].get("simd", 0) > 0)
    for k in (p1, p4, x1):
        o = rb[(k["type"], k["tokens"], k["isa"], k["layout"])]
        want(f"{t} {k['isa']} {k['layout']} x{k['tokens']}: the same count from -i 3 "
             f"({k['insn']:.0f} vs {o['insn']:.0f}, within 1.5 %)", abs(k["insn"] - o["insn"]) <= 0.015 * k["insn"])
sys.exit(0 if ok else 1)
EOF
check "counts: attributed, amortised by tokens, stable across iteration counts" test $? -eq 0
cat "$T/py.log"

# the i8mm table: refused for the boards (Orin has no i8mm), and its
# token-pair tile (usmmla) cheaper per token than the sdot tile
tools/kcount -b 1 --no-x86 --arm64-kernels neon-i8mm --profiles share/edgeq/profiles.ini >/dev/null 2>"$T/e5"
check "kcount --profiles refuses the i8mm table (exit 2)" test $? -eq 2
check "  and says why" grep -q "no i8mm" "$T/e5"
tools/kcount -T Q8_0 -b 4 -r 64 -c 1024 -i 2 --no-x86 --json >"$T/n.json" 2>>"$T/a.err"
tools/kcount -T Q8_0 -b 4 -r 64 -c 1024 -i 2 --no-x86 --arm64-kernels neon-i8mm --json >"$T/m.json" 2>>"$T/a.err"
python3 - "$T/n.json" "$T/m.json" >"$T/py3.log" 2>&1 <<'EOF'
import json, sys
def packed(f):
    return [r for r in json.load(open(f))["rows"] if r["layout"] == "packed"][0]
n, m = packed(sys.argv[1]), packed(sys.argv[2])
good = (n["kernels"] == "neon" and m["kernels"] == "neon-i8mm" and
        m["functions"][0][0] == "tile_mm_any" and
        m["insn_per_byte"] < 0.9 * n["insn_per_byte"])
print(f"Q8_0 x4 packed: neon {n['insn_per_byte']:.3f} ({n['functions'][0][0]}), "
      f"neon-i8mm {m['insn_per_byte']:.3f} ({m['functions'][0][0]}) instructions per byte")
sys.exit(0 if good else 1)
EOF
check "the i8mm tile runs >10 % fewer instructions than the sdot tile (Q8_0, 4 tokens)" test $? -eq 0
cat "$T/py3.log"

# attention per (key, query) pair: kbench --attn and kcount --attn
"$KB" --attn 64:8 -i 1 >/dev/null 2>"$T/e6"
check "kbench --attn refuses a spec without the query count (exit 2)" test $? -eq 2
check "  and says what it takes" grep -q "HD:NK:NQ" "$T/e6"
"$KB" --attn 64:8:2 --attn-path sideways -i 1 >/dev/null 2>&1
check "kbench --attn refuses an unknown path (exit 2)" test $? -eq 2
for p in loop single group tiles; do "$KB" --attn 40:9:3 --attn-path $p -i 1; done >"$T/attn.txt" 2>&1
check "kbench --attn: the four paths give the same output" \
	test "$(sed -n 's/.* check //p' "$T/attn.txt" | sort -u | wc -l)" -eq 1
tools/kcount --attn 64:0:4 >/dev/null 2>&1
check "kcount --attn refuses 0 keys (exit 2)" test $? -eq 2
tools/kcount --attn 64:64:4 -i 1 --no-x86 --json >"$T/at.json" 2>>"$T/a.err"
python3 - "$T/at.json" >"$T/py4.log" 2>&1 <<'EOF'
import json, sys
r = {x["path"]: x for x in json.load(open(sys.argv[1]))["rows"]}
c = {p: r[p]["cycles_per_pair"] for p in ("loop", "single", "group") if p in r}
print("cycles per (key, query) pair, hd 64, 64 keys, 4 queries:", c)
sys.exit(0 if len(c) == 3 and c["group"] < c["single"] < c["loop"] and
         r["group"]["functions"][0][0].startswith("edgeq_attn_") else 1)
EOF
check "NEON attention: the group forms cost less than the many-key forms, those less than the per-key loop" test $? -eq 0
cat "$T/py4.log"
for p in group tiles; do "$KB" --attn 64:37:19 --attn-path $p -i 1; done >"$T/attn2.txt" 2>&1
check "kbench --attn: tiles and group give the same output for a block of 19 queries" \
	test "$(sed -n 's/.* check //p' "$T/attn2.txt" | sort -u | wc -l)" -eq 1
tools/kcount --attn 64:64:32 -i 1 --no-x86 --json >"$T/at32.json" 2>>"$T/a.err"
python3 - "$T/at32.json" >"$T/py6.log" 2>&1 <<'EOF'
import json, sys
r = {x["path"]: x for x in json.load(open(sys.argv[1]))["rows"]}
print("cycles per pair, hd 64, 64 keys, 32 queries (a prompt block):",
      {p: r[p]["cycles_per_pair"] for p in ("group", "tiles") if p in r})
sys.exit(0 if r["tiles"]["cycles_per_pair"] < r["group"]["cycles_per_pair"]
         and any(f[0] == "edgeq_attn_scores_f16_t_neon"
                 for f in r["tiles"]["functions"]) else 1)
EOF
check "NEON attention: a prompt block's keys-in-lanes tiles cost less than the group forms" test $? -eq 0
cat "$T/py6.log"

# activation quantization per block: kbench --insn --quant, kcount --quant
"$KB" --insn --quant -T Q4_0 -i 1 >/dev/null 2>"$T/e7"
check "kbench --insn --quant refuses a weight type (exit 2)" test $? -eq 2
check "  and names the two it takes" grep -q "Q8_0|Q8_K" "$T/e7"
tools/kcount --quant -c 512 -i 1 --no-x86 --json >"$T/q.json" 2>>"$T/a.err"
python3 - "$T/q.json" >"$T/py5.log" 2>&1 <<'EOF2'
import json, sys
r = {(x["type"], x["kernels"]): x for x in json.load(open(sys.argv[1]))["quant"]}
ok = True
for t in ("Q8_0", "Q8_K"):
    s, n = r[(t, "scalar")], r[(t, "neon")]
    print(f"{t}: cycles per block, scalar reference {s['cycles_per_block']:.1f}, neon {n['cycles_per_block']:.1f}")
    ok &= n["cycles_per_block"] * 3 < s["cycles_per_block"] and \
        n["functions"][0][0].startswith("neon_q8_")
sys.exit(0 if ok else 1)
EOF2
check "NEON activation quantization: under a third of the scalar reference's cycles per block" test $? -eq 0
cat "$T/py5.log"

# profiles.ini's figures are what the kernels count today (the default shape)
tools/kcount -T Q4_0,Q4_K -b 1 --no-x86 --profiles share/edgeq/profiles.ini --json >"$T/p.json" 2>>"$T/a.err"
check "kcount --profiles runs" test $? -eq 0
python3 - "$T/p.json" share/edgeq/profiles.ini >"$T/py2.log" 2>&1 <<'EOF'
import configparser, json, sys
d = json.load(open(sys.argv[1]))
cp = configparser.ConfigParser(inline_comment_prefixes=("#",))
cp.read(sys.argv[2])
ok = bool(d["boards"])
for e in d["boards"]:
    have = dict(x.split(":") for x in cp[e["board"]]["cpu_stream_gbps"].split(","))
    fig = float(have.get(e["type"], "nan"))
    good = abs(fig - e["cpu_gbps"]) <= 0.02 * e["cpu_gbps"]
    print(("ok " if good else "FAIL ") + f"{e['board']} {e['type']}: profiles.ini {fig}, counted {e['cpu_gbps']}")
    ok &= good
sys.exit(0 if ok else 1)
EOF
check "profiles.ini's cpu_stream_gbps equal today's counts (rerun tools/kcount --profiles after a kernel change)" test $? -eq 0
cat "$T/py2.log"
"$EDGEQ" plan -P jetson-orin-nano-8gb --params 1.1e9 --bpw 4.5 >"$T/plan.txt" 2>&1
check "edgeq plan shows the counted CPU stream" grep -q "CPU kernels' stream *Q4_0" "$T/plan.txt"
check "  and the types it bounds" grep -q "bound by the CPU, not memory, for: Q5_K" "$T/plan.txt"
summary
