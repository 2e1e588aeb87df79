#!/usr/bin/env bash
# Speculative decoding with device queues: the target verifying on a
# placed device (whole blocks through the in-process CPU device backend,
# and on Vulkan where there is a device), or the draft model placed there
# instead; greedy tokens are the all-CPU run's either way, a model drafting
# for itself has every draft accepted; --draft-on auto gives the queue to
# the model the placer predicts more tokens/s for (the target where the
# queue runs it, the draft where only the draft's weight type runs there);
# bad --draft-on arguments are refused with a reason.
# timeout: 180
set -u
. "$(dirname "$0")/../lib/testlib.sh"

B=${EDGEQ_TOP:-.}/${O:-build}
RUN=$B/tools/place-run
GEN=$B/tools/gguf-gen
[ -x "$RUN" ] && [ -x "$GEN" ] || skip_all "place-run or gguf-gen not built"
"$GEN" -o "$T/t.gguf" --shape tiny --type q4_k --layers 4 >/dev/null &&
	"$GEN" -o "$T/d.gguf" --shape tiny --type q8_0 --layers 2 >/dev/null ||
	skip_all "gguf-gen could not make the tiny models"
# a device for every op and type, and one that runs only Q8_0 matrices
printf '[device.gpu]\nops = all\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/gpu.ini"
printf '[device.npu]\nops = all\ndtypes = q8_0\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' >"$T/npu8.ini"
P=(-p "Once upon a time, once upon a time, once upon a time" -n 24 --no-calib)
js() { python3 -c "import json,sys; d=json.load(open('$1')); s=d['stats']; sys.exit(0 if ($2) else 1)"; }
toks() { python3 -c "import json; print([t['tok'] for t in json.load(open('$1'))['per_token']])"; }

"$RUN" -m "$T/t.gguf" "${P[@]}" --backend none >"$T/cpu.json"
check "all-cpu run" js "$T/cpu.json" "d['error'] is None and len(d['per_token']) == 24"
want=$(toks "$T/cpu.json")

# spec NAME BACKEND ARGS...: the placed run's tokens are the CPU's
spec() {
	local name=$1 be=$2
	shift 2
	"$RUN" -m "$T/t.gguf" "${P[@]}" --queue gpu0 --devices "$T/gpu.ini" \
		--backend "$be" "$@" >"$T/$name.json" 2>"$T/$name.err"
	check "$name: generated" js "$T/$name.json" "d['error'] is None"
	check "$name: greedy tokens as the all-cpu run" \
		test "$(toks "$T/$name.json")" = "$want"
}

spec self-target cpudev --draft "$T/t.gguf"
check "self-target: the target's blocks ran on the device, every draft accepted" \
	js "$T/self-target.json" "s['draft_on'] == 'target' and s['blocks'] > 0 and s['drafted'] > 0 and s['accepted'] == s['drafted']"
spec self-draft cpudev --draft "$T/t.gguf" --draft-on draft
check "self-draft: the draft model's ops ran on the device, every draft accepted" \
	js "$T/self-draft.json" "s['draft_on'] == 'draft' and s['offloaded'] > 0 and s['drafted'] > 0 and s['accepted'] == s['drafted']"
spec layers cpudev --draft layers:1
check "layers:1 with the target placed: drafts were verified" \
	js "$T/layers.json" "s['drafted'] > 0 and s['blocks'] > 0"
spec lookup cpudev --draft lookup
spec small-target cpudev --draft "$T/d.gguf" --draft-on target

spec auto-gpu cpudev --draft "$T/d.gguf" --draft-on auto
check "auto, a device for every type: the target goes there" \
	python3 -c "import json,sys; d=json.load(open('$T/auto-gpu.json')); c=d['draft_choice']; sys.exit(0 if d['stats']['draft_on'] == 'target' and c['target_on_tok_s'] >= c['draft_on_tok_s'] and c['target_dev_ms'] < c['target_cpu_ms'] else 1)"
"$RUN" -m "$T/t.gguf" "${P[@]}" --queue npu0 --devices "$T/npu8.ini" \
	--backend cpudev --draft "$T/d.gguf" --draft-on auto >"$T/auto-npu.json"
check "auto, a device for Q8_0 only: the Q8_0 draft goes there, not the Q4_K target" \
	python3 -c "import json,sys; d=json.load(open('$T/auto-npu.json')); c=d['draft_choice']; sys.exit(0 if d['error'] is None and d['stats']['draft_on'] == 'draft' and c['draft_on_tok_s'] > c['target_on_tok_s'] and c['target_dev_ms'] == c['target_cpu_ms'] and d['stats']['offloaded'] > 0 else 1)"
check "auto-npu: greedy tokens as the all-cpu run" test "$(toks "$T/auto-npu.json")" = "$want"

"$RUN" -m "$T/t.gguf" "${P[@]}" --queue gpu0 --devices "$T/gpu.ini" \
	--backend cpudev --draft lookup --draft-on draft >/dev/null 2>"$T/e"
check "--draft-on draft without a draft model: exit 2" test $? -eq 2
check "  ... says why" grep -q "needs a draft model" "$T/e"
"$B/edgeq" run -m "$T/t.gguf" -p hi -n 2 --draft "$T/d.gguf" --draft-on nowhere >/dev/null 2>"$T/e"
check "edgeq run --draft-on nowhere: exit 2" test $? -eq 2
check "  ... names the choices" grep -q -- "--draft-on must be auto, target or draft" "$T/e"
"$B/edgeq" run -m "$T/t.gguf" -p hi -n 2 --draft "$T/d.gguf" --draft-on draft >/dev/null 2>"$T/e"
check "edgeq run --draft-on draft without --queue: exit 2" test $? -eq 2
check "  ... says what it needs" grep -q -- "needs --queue and a draft model" "$T/e"

# the same on a real Vulkan device (lavapipe in CI)
"$B/edgeq" agent --list-devices >"$T/devs" 2>&1
if grep -q '^vulkan 0: ' "$T/devs"; then
	spec vk-self vulkan --draft "$T/t.gguf"
	check "vulkan: the target's blocks on the device, every draft accepted" \
		js "$T/vk-self.json" "s['blocks'] > 0 and s['drafted'] > 0 and s['accepted'] == s['drafted']"
	spec vk-draft vulkan --draft "$T/t.gguf" --draft-on draft
elif [ "${CI:-}" = true ]; then
	check "CI=true but no Vulkan device: $(grep '^vulkan' "$T/devs")" false
else
	echo "# skip: the Vulkan part: no Vulkan device ($(grep '^vulkan' "$T/devs"))"
fi
summary
