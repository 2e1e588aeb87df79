#!/usr/bin/env bash
# edgeq calibrate: this machine's CPU profile measured (memory bandwidth,
# cached matmul GFLOP/s, one parallel op's cost) and written as
# [device.cpu], which `edgeq plan --placement` then plans with; a profile
# it cannot write, a bad calibration file and bad arguments fail clearly
# and leave nothing behind.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/testlib.sh"
C=$T/cal/dir/calibration.ini

"$EDGEQ" calibrate --quick -t 2 -o "$C" --json >"$T/j" 2>"$T/e"
check "calibrate --quick: exits 0 ($(head -c 200 "$T/e"))" test $? -eq 0
check "  ... the figures, plausible, and where they went" python3 - "$T/j" "$C" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d['threads'] == 2 and d['kernels'], d
assert 0.2 < d['mem_gbs'] < 5000, d
assert 0.5 < d['gflops'] < 1e6 and d['gflops'] == min(d['gflops_q4_0'], d['gflops_q8_0']), d
assert 0 < d['op_us'] < 10000, d
assert d['written'] == sys.argv[2], d
assert d['builtin_mem_gbs'] == 20 and d['builtin_gflops'] == 50, d
PY
check "  ... a [device.cpu] section of the three keys" python3 - "$T/j" "$C" <<'PY'
import configparser, json, sys
d = json.load(open(sys.argv[1]))
c = configparser.ConfigParser()
c.read(sys.argv[2])
assert c.sections() == ['device.cpu'], c.sections()
s = c['device.cpu']
assert set(s) == {'gflops', 'mem_gbs', 'op_us'}, dict(s)
assert abs(float(s['mem_gbs']) - d['mem_gbs']) < 0.01, (dict(s), d)
assert abs(float(s['gflops']) - d['gflops']) < 0.1, (dict(s), d)
PY
check "  ... no temporary file left" bash -c '[ "$(ls "$1" | wc -l)" -eq 1 ]' _ "$(dirname "$C")"

# the planner reads it over devices.ini: the cpu's numbers are the measured
EDGEQ_CALIBRATION=$C "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" --json >"$T/p.json" 2>"$T/e"
check "plan --placement with the calibration: exits 0" test $? -eq 0
check "  ... names it" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["cpu_calibration"] == sys.argv[2], d["cpu_calibration"]' "$T/p.json" "$C"
EDGEQ_CALIBRATION=$C "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" >"$T/p.txt" 2>&1
gb=$(python3 -c 'import configparser,sys; c=configparser.ConfigParser(); c.read(sys.argv[1]); print(c["device.cpu"]["mem_gbs"])' "$C")
# the plan prints %g (70.5 for the file's 70.50): compare the numbers
check "  ... the cpu at the measured $gb GB/s" python3 -c '
import re, sys
m = re.search(r"^  cpu .*, ([0-9.e+]+) GB/s\)", open(sys.argv[1]).read(), re.M)
assert m and float(m.group(1)) == float(sys.argv[2]), (m and m.group(1), sys.argv[2])' "$T/p.txt" "$gb"
check "  ... and says so" grep -q "cpu profile: measured, $C" "$T/p.txt"
EDGEQ_CALIBRATION= "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" >"$T/p0.txt" 2>&1
check "without one: the built-in 20 GB/s, said so" bash -c 'grep -q "cpu .*, 20 GB/s)" "$1" && grep -q "configured (no edgeq calibrate)" "$1"' _ "$T/p0.txt"

printf '[device.cpu]\nmem_gbs = fast\n' >"$T/bad.ini"
EDGEQ_CALIBRATION=$T/bad.ini "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" >/dev/null 2>"$T/e"
check "a bad calibration file: fails (exit $?)" test -s "$T/e"
check "  ... naming the file, line and key" grep -q "calibration $T/bad.ini:2: \[device.cpu\] mem_gbs = fast: bad value" "$T/e"
EDGEQ_CALIBRATION=$T/none.ini "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" >/dev/null 2>"$T/e"
check "a missing calibration file named: fails, naming it" grep -q "calibration $T/none.ini: cannot open" "$T/e"

"$EDGEQ" calibrate --quick -o /dev/full/x.ini >/dev/null 2>"$T/e"
rc=$?
check "an unwritable place: fails (exit $rc)" test $rc -ne 0
check "  ... naming it" grep -q "/dev/full/x.ini" "$T/e"
"$EDGEQ" calibrate --quick -t 0 -o "$T/x.ini" >/dev/null 2>&1
check "-t 0 is one per CPU, not an error" test $? -eq 0
"$EDGEQ" calibrate -t 5000 -o "$T/y.ini" >/dev/null 2>"$T/e"
check "-t 5000: usage error (exit 2)" test $? -eq 2
check "  ... nothing written" test ! -e "$T/y.ini"
"$EDGEQ" calibrate --quick --dry-run -o "$T/z.ini" >"$T/out" 2>&1
check "--dry-run: measures, writes nothing" bash -c 'grep -q "not written" "$1" && [ ! -e "$2" ]' _ "$T/out" "$T/z.ini"
# an agent's execution backend, into the same file: the cpu backend always,
# Vulkan where a device is (lavapipe in CI)
cp "$C" "$T/before.ini"
"$EDGEQ" calibrate --quick --backend cpu -P npu -o "$C" --json >"$T/bj" 2>"$T/e"
check "--backend cpu -P npu: exits 0 ($(head -c 200 "$T/e"))" test $? -eq 0
check "  ... [device.npu] added, [device.cpu] kept as it was" python3 - "$C" "$T/before.ini" "$T/bj" <<'PY'
import configparser, json, sys
c, b = configparser.ConfigParser(), configparser.ConfigParser()
c.read(sys.argv[1]); b.read(sys.argv[2])
d = json.load(open(sys.argv[3]))
assert c.sections() == ['device.cpu', 'device.npu'], c.sections()
assert dict(c['device.cpu']) == dict(b['device.cpu'])
n = c['device.npu']
assert set(n) == {'gflops', 'mem_gbs', 'launch_us', 'op_us'}, dict(n)
assert float(n['mem_gbs']) > 0 and float(n['gflops']) > 0 and float(n['launch_us']) > 0, dict(n)
assert d['profile'] == 'npu' and d['device'] and abs(float(n['mem_gbs']) - d['mem_gbs']) < 0.01, d
PY
"$EDGEQ" calibrate --quick --backend cpu -P npu -o "$C" >/dev/null 2>&1
check "  ... again: the section replaced, not repeated" bash -c '[ "$(grep -c "^\[device.npu\]" "$1")" -eq 1 ]' _ "$C"
EDGEQ_CALIBRATION=$C "$EDGEQ" plan --placement --shape 1b --sysfs "$T/nosysfs" >/dev/null 2>"$T/e"
check "  ... the file still loads" test $? -eq 0
if "$EDGEQ" agent --list-devices 2>/dev/null | grep -q '^vulkan 0:'; then
	"$EDGEQ" calibrate --quick --backend vulkan -o "$C" --json >"$T/vj" 2>"$T/e"
	check "--backend vulkan: exits 0 ($(head -c 200 "$T/e"))" test $? -eq 0
	check "  ... [device.gpu] from the device it names" python3 - "$C" "$T/vj" <<'PY'
import configparser, json, sys
c = configparser.ConfigParser(); c.read(sys.argv[1])
d = json.load(open(sys.argv[2]))
assert c.sections() == ['device.cpu', 'device.npu', 'device.gpu'], c.sections()
g = c['device.gpu']
assert float(g['mem_gbs']) > 0 and float(g['gflops']) > 0 and float(g['launch_us']) > 0, dict(g)
assert d['kernels'] == 'vulkan' and d['device'], d
PY
elif [ "${CI:-}" = true ]; then
	check "CI=true but no Vulkan device (lavapipe is expected)" false
else
	echo "# no Vulkan device here: the vulkan backend's calibration not run"
fi
# the agent's own flag: the same measurement of the backend it would run
"$EDGEQ" agent --calibrate --backend cpu -P npu --quick -o "$T/a.ini" >"$T/ao" 2>"$T/e"
check "agent --calibrate --backend cpu -P npu: exits 0 ($(head -c 200 "$T/e"))" test $? -eq 0
check "  ... writes [device.npu] with the four figures" python3 - "$T/a.ini" <<'PY'
import configparser, sys
c = configparser.ConfigParser(); c.read(sys.argv[1])
assert c.sections() == ['device.npu'], c.sections()
assert all(float(c['device.npu'][k]) > 0 for k in ('gflops', 'mem_gbs', 'launch_us', 'op_us')), dict(c['device.npu'])
PY
"$EDGEQ" agent --calibrate --backend cpu -P cpu -o "$T/a2.ini" >/dev/null 2>"$T/e"
check "agent --calibrate -P cpu: usage error (exit $?)" grep -q "the cpu profile is the CPU's own" "$T/e"
check "  ... and nothing written" test ! -e "$T/a2.ini"
"$EDGEQ" agent --calibrate --backend nosuch -o "$T/a2.ini" >/dev/null 2>"$T/e"
check "agent --calibrate --backend nosuch: refused" grep -q "unknown backend 'nosuch'" "$T/e"
if "$EDGEQ" agent --list-devices 2>/dev/null | grep -q '^vulkan 0:'; then
	"$EDGEQ" agent --calibrate --quick -o "$T/a3.ini" >/dev/null 2>"$T/e"
	check "agent --calibrate (auto: vulkan): [device.gpu] ($(head -c 200 "$T/e"))" grep -q '^\[device.gpu\]' "$T/a3.ini"
fi
"$EDGEQ" calibrate --backend nosuch -o "$T/n.ini" >/dev/null 2>"$T/e"
check "--backend nosuch: usage error (exit $?)" grep -q -- "--backend nosuch" "$T/e"
"$EDGEQ" calibrate --backend cpu --device 7 -o "$T/n.ini" >/dev/null 2>"$T/e"
check "--device 7 of the cpu backend: no such device, said" grep -q "no such device" "$T/e"
"$EDGEQ" calibrate --device 0 -o "$T/n.ini" >/dev/null 2>"$T/e"
check "--device without --backend: exit 2" test $? -eq 2
"$EDGEQ" calibrate --backend cpu -P 'a]b' -o "$T/n.ini" >/dev/null 2>"$T/e"
check "a profile name that would break the file: exit 2" test $? -eq 2
check "  ... nothing written by the failures" test ! -e "$T/n.ini"
summary
