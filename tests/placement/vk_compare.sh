# Shared by t_vulkan.sh and t_vulkan_blocks.sh (sourced after testlib.sh,
# not a test): the tools and the Vulkan device (a skip without one, a
# failure under CI=true: lavapipe is expected), a device profile taking
# the op kinds $VK_OPS and place-run's queue arguments Q for it; the JSON
# checks of place-run's output and compare(), the greedy-token comparison
# against the all-CPU run with its logit tolerance.
B=${EDGEQ_TOP:-.}/${O:-build}
RUN=$B/tools/place-run
GEN=$B/tools/gguf-gen
[ -x "$RUN" ] && [ -x "$GEN" ] || skip_all "place-run or gguf-gen not built"
"$B/edgeq" agent --list-devices >"$T/devs" 2>&1
if ! grep -q '^vulkan 0: ' "$T/devs"; then
	why="no Vulkan device: $(grep '^vulkan' "$T/devs")"
	if [ "${CI:-}" = true ]; then echo "FAIL - CI=true but $why"; exit 1; fi
	skip_all "$why"
fi
printf '[device.gpu]\nops = %s\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\nlaunch_us = 0\nop_us = 0\nsync_us = 0\n' "$VK_OPS" >"$T/gpu.ini"
Q=(--queue gpu0 --devices "$T/gpu.ini" --no-calib -p "Once upon a time")
js() { python3 -c "import json,sys; d=json.load(open('$1')); p=d['per_token']; s=d['stats']; sys.exit(0 if ($2) else 1)"; }
toks() { python3 -c "import json; print(','.join(str(t['tok']) for t in json.load(open('$1'))['per_token']))"; }

# compare NAME MODEL: greedy tokens, else the logit pair at the first split
compare() {
	local name=$1 m=$2
	"$RUN" -m "$m" -n 32 "${Q[@]}" --backend none >"$T/$name-cpu.json"
	"$RUN" -m "$m" -n 32 "${Q[@]}" --backend vulkan >"$T/$name-vk.json"
	check "$name: matmuls ran on the Vulkan device" \
		js "$T/$name-vk.json" "d['error'] is None and s['offloaded'] > 0 and s['fallbacks'] == 0"
	# q, k, v (and gate, up) of one placed op go as one chain; phi3 has
	# them fused already (one matrix each)
	if [ "$name" != phi3-q8_0 ]; then
		check "$name: one chain per placed op, not per matrix" \
			js "$T/$name-vk.json" "0 < d['dev']['chains'] < s['offloaded']"
	fi
	# teacher-forced on the CPU's tokens: both runs see the same inputs
	local f="1,$(toks "$T/$name-cpu.json")"
	"$RUN" -m "$m" "${Q[@]}" --backend none --force "$f" --dump-logits "$T/$name-cpu.bin" >/dev/null
	"$RUN" -m "$m" "${Q[@]}" --backend vulkan --force "$f" --dump-logits "$T/$name-vk.bin" >/dev/null
	check "$name: greedy tokens as the CPU's, or a tie within tolerance" \
		python3 - "$T/$name" "$(toks "$T/$name-cpu.json")" "$(toks "$T/$name-vk.json")" <<'PY'
import sys
from array import array
base, a, b = sys.argv[1], sys.argv[2].split(','), sys.argv[3].split(',')
def load(p):
    v = array('f')
    with open(p, 'rb') as f:
        v.frombytes(f.read())
    return v
c, g = load(base + "-cpu.bin"), load(base + "-vk.bin")
steps = len(a) + 1
n = len(c) // steps
assert len(c) == len(g) == n * steps
d = max(abs(x - y) for x, y in zip(c, g))
scale = max(abs(x) for x in c)
tol = 1e-4 * scale  # Documentation/gpu-agent.rst: relative to the largest logit
print(f"# {base.split('/')[-1]}: max |logit gpu - cpu| = {d:.3g} (largest logit {scale:.3g}, tolerance {tol:.3g})")
ok = d <= tol
if a != b:
    i = next(i for i in range(min(len(a), len(b))) if a[i] != b[i])
    # logits of step i + 1 of the forced run chose token i of the greedy one
    rc, rg = c[(i + 1) * n:(i + 2) * n], g[(i + 1) * n:(i + 2) * n]
    ta, tb = int(a[i]), int(b[i])
    print(f"# first differing token at step {i}: cpu {ta} ({rc[ta]:.7g} vs {rc[tb]:.7g}), "
          f"gpu {tb} ({rg[tb]:.7g} vs {rg[ta]:.7g})")
    ok = ok and abs(rc[ta] - rc[tb]) <= 2 * tol
else:
    print("# greedy tokens identical")
sys.exit(0 if ok else 1)
PY
}

