#!/usr/bin/env bash
# edgeq manifest / rollback through the command: round trip, every field
# tampered, mismatched systems, key permissions, and kill -9 at every step of
# an update leaving a loadable bundle.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/testlib.sh"
D=$(dirname "$0")
M() { "$EDGEQ" manifest "$@"; }
cd "$T"
python3 "$EDGEQ_TOP/$D/mkgguf.py" m.gguf
python3 "$EDGEQ_TOP/$D/mkgguf.py" tok.gguf --vocab-extra
export EDGEQ_MODULE_ABI=1

M keygen -k s.key 2>/dev/null
check "keygen: secret key mode 0600" test "$(stat -c %a s.key)" = 600
cat >bench.json <<B
{"schema": "edgeq-bench/1", "date": "2026-11-29T09:00:00Z", "device": "test-board", "decode": {"tok_s": 10}}
B
M create -m m.gguf --family test-board --module-abi 1 --bench bench.json --min-tps 5 \
	--memory-budget 1G -o man.json
check "create writes JSON" python3 -c "import json; json.load(open('man.json'))"
check "create: evidence embedded with date and device" python3 -c "
import json; e=json.load(open('man.json'))['evidence']
assert e['date'] == '2026-11-29T09:00:00Z' and e['device'] == 'test-board' and e['bench']['decode']['tok_s'] == 10"
M verify -K s.key.pub -m m.gguf --family test-board man.json 2>err
check "unsigned bundle refused (exit 3)" test $? -eq 3
check "unsigned named" grep -q 'unsigned bundle' err
M sign -k s.key man.json
python3 "$EDGEQ_TOP/$D/jsonschema.py" "$EDGEQ_TOP/Documentation/manifest.schema.json" man.json
check "signed manifest validates against Documentation/manifest.schema.json" test $? -eq 0
M verify -K s.key.pub -m m.gguf --family test-board man.json >out 2>&1
check "signed bundle verifies" test $? -eq 0
M verify -K s.key.pub man.json -m m.gguf --family test-board >/dev/null 2>err
check "options after the file are accepted (the usage line's order)" test $? -eq 0
M verify -K s.key.pub man.json -- -m 2>err
check "after --, '-m' is an argument, not an option" grep -q "unexpected argument '-m'" err
check "show names the signing key" sh -c "$EDGEQ manifest show man.json | grep -q '^signature  [0-9a-f]\{16\}'"

# every field, changed after signing, is detected
python3 - <<'P' >fields
import json
m = json.load(open("man.json"))
def walk(o, path):
    if isinstance(o, dict):
        for k, v in o.items():
            if path == [] and k == "signature":
                continue
            yield from walk(v, path + [k])
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from walk(v, path + [i])
    else:
        yield path
for p in walk(m, []):
    print(json.dumps(p))
P
n=0 bad=0
while read -r path; do
	n=$((n + 1))
	python3 - "$path" <<'P'
import json, sys
path = json.loads(sys.argv[1])
m = json.load(open("man.json"))
o = m
for k in path[:-1]:
    o = o[k]
v = o[path[-1]]
if isinstance(v, bool): v = not v
elif isinstance(v, (int, float)): v = v + 1
elif v is None: v = 0
else: v = v + "x"
o[path[-1]] = v
json.dump(m, open("tampered.json", "w"), indent=2)
P
	M verify -K s.key.pub -m m.gguf --family test-board tampered.json 2>err >/dev/null
	if [ $? -ne 3 ] || ! grep -q tampered err; then
		bad=$((bad + 1)); echo "not detected: $path"
	fi
done <fields
check "every one of $n tampered fields detected" test $bad -eq 0 -a $n -gt 20
python3 -c "
import json; m=json.load(open('man.json')); m['extra']=1; json.dump(m, open('tampered.json','w'))"
M verify -K s.key.pub -m m.gguf --family test-board tampered.json 2>/dev/null
check "an added field is detected" test $? -eq 3
python3 -c "
import json; m=json.load(open('man.json')); del m['routing']; json.dump(m, open('tampered.json','w'))"
M verify -K s.key.pub -m m.gguf --family test-board tampered.json 2>/dev/null
check "a removed field is detected" test $? -eq 3

# mismatched systems, each named
M verify -K s.key.pub -m tok.gguf --family test-board man.json 2>err
check "other tokenizer: exit 3" test $? -eq 3
check "tokenizer hash differs" grep -q 'tokenizer hash differs' err
M verify -K s.key.pub -m m.gguf --family jetson-orin-nano man.json 2>err
check "wrong device family named" grep -q 'made for test-board, running on jetson-orin-nano' err
mkdir -p sys/proc/device-tree
printf 'NVIDIA Jetson Orin Nano Developer Kit\0' >sys/proc/device-tree/model
EDGEQ_SYSROOT=$T/sys M verify -K s.key.pub -m m.gguf man.json 2>err
check "device family from the device tree" grep -q 'running on jetson-orin-nano (NVIDIA Jetson Orin Nano Developer Kit)' err
M create -m m.gguf --family test-board --module-abi 2 -o abi.json && M sign -k s.key abi.json
M verify -K s.key.pub -m m.gguf --family test-board abi.json 2>err
check "module ABI 2 required, 1 loaded" grep -q 'module ABI 2 required, 1 loaded' err
mkdir bpf && echo one >bpf/pressure.bpf.o
M create -m m.gguf --family test-board --bpf-dir bpf -o bpf.json && M sign -k s.key bpf.json
M verify -K s.key.pub -m m.gguf --family test-board --bpf-dir bpf bpf.json >/dev/null 2>&1
check "BPF object pinned and verified" test $? -eq 0
echo two >bpf/pressure.bpf.o
M verify -K s.key.pub -m m.gguf --family test-board --bpf-dir bpf bpf.json 2>err
check "BPF object hash differs" grep -q 'BPF object pressure.bpf.o hash differs' err
M keygen -k other.key 2>/dev/null
M verify -K other.key.pub -m m.gguf --family test-board man.json 2>err
check "another key: refused, both key ids named" grep -q 'signed by key [0-9a-f]*, not by the trusted key [0-9a-f]*' err

# key permissions
chmod 640 s.key
M sign -k s.key man.json 2>err
check "group-readable secret key refused" test $? -eq 5
check "the mode is named" grep -q 'mode 0640' err
chmod 604 s.key
M sign -k s.key man.json 2>/dev/null; check "other-readable secret key refused" test $? -eq 5
chmod 600 s.key

# install, rollback, kill -9 at every step
S=$T/store
M install -K s.key.pub -m m.gguf --family test-board --store "$S" man.json >/dev/null
check "install: current set" test -L "$S/current"
M create -m m.gguf --family test-board --name second -o man2.json && M sign -k s.key man2.json
M install -K s.key.pub -m m.gguf --family test-board --store "$S" man2.json >/dev/null
first=$(readlink "$S/previous") second=$(readlink "$S/current")
check "second install: previous is the first" test -n "$first" -a "$first" != "$second"
"$EDGEQ" rollback --store "$S" --reason "test by hand" >/dev/null
check "rollback: current is the first again" test "$(readlink "$S/current")" = "$first"
check "rollback recorded with its reason" grep -q "rollback $second -> $first: test by hand" "$S/rollback.log"
"$EDGEQ" rollback --store "$S" 2>err; check "no previous: rollback fails" test $? -ne 0
M install -K s.key.pub -m tok.gguf --family test-board --store "$S" man2.json 2>/dev/null
check "install refuses a model that does not match" test $? -eq 3
loadable() { # the current bundle is complete and verifies
	M verify -K s.key.pub --family test-board "$S/current/manifest.json" >/dev/null 2>&1 &&
		cmp -s "$S/current/model.gguf" m.gguf
}
k=0
for step in 1 2 3 4 5 6 7 8; do
	M create -m m.gguf --family test-board --name "kill$step" -o k.json && M sign -k s.key k.json
	before=$(readlink "$S/current")
	EDGEQ_TEST_KILL_AT=$step M install -K s.key.pub -m m.gguf --family test-board --store "$S" k.json >/dev/null 2>&1
	rc=$?
	after=$(readlink "$S/current")
	if [ $rc -ne 137 ] || ! loadable; then
		k=$((k + 1)); echo "step $step: rc $rc, current $before -> $after not loadable"
	fi
	# the next update cleans up and succeeds
	M install -K s.key.pub -m m.gguf --family test-board --store "$S" k.json >/dev/null 2>&1 || k=$((k + 1))
	loadable || k=$((k + 1))
done
check "kill -9 at each of 8 update steps leaves a loadable bundle" test $k -eq 0
check "no half-written bundle left behind" test -z "$(ls -A "$S" | grep '^\.tmp-\|^\.link-')"
M status --store "$S" >out
check "status shows current and previous" grep -q '^previous  [0-9a-f]' out
summary
