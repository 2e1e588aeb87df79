#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 900
# The aarch64 VM: Debian's arm64 kernel under qemu-system-aarch64 (TCG,
# -M virt, -cpu max) runs the arm64 build (make cross, with its BPF
# programs) with the host's arm64 libraries over 9p: the pressure monitor's
# BPF programs attach to an arm64 kernel (thermal_pressure_update among
# them) and pass their BPF_PROG_TEST_RUN selftest, the NEON kernels' and the
# streamer's unit tests pass with real io_uring (which qemu-user lacks), and
# greedy decoding, mmap (with the i8mm table the VM's CPU selects, and with
# the dotprod-only neon table an Orin runs) and streamed through io_uring,
# gives the x86-64 build's tokens and logits bit for bit; with edgeq.ko cross-built for the
# arm64 kernel (tools/vm/kmod-arm64) loaded, every kmodtest case passes and
# the module unloads. Any BUG/WARNING/refcount line in the guest's kernel
# log fails (tools/vm/run-in-vm).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP"
B=${O:-build}
why=$(tools/vm/run-in-vm --arch arm64 --probe 2>&1) || skip_all "no aarch64 VM here: $(tail -n 1 <<<"$why")"
t0=$(date +%s)
nice -n 10 make -j"$(nproc)" cross >"$T/cross.log" 2>&1 ||
	{ tail -n 20 "$T/cross.log"; check "make cross" false; summary; }
A=build-aarch64
[ -f "$A/bpf/pressure.skel.h" ] && bpf=1 || bpf=0

# models where the guest can read them (the project tree; the guest's /tmp
# is its own tmpfs), with the x86-64 build's answers next to them
W=$B/vm-arm64/work
rm -rf "$W"
mkdir -p "$W"
args=()
n=0
add() { # MODEL PROMPT
	"$EDGEQ" run -m "$1" -p "$2" -n 8 -t 1 -b 4 --weights mmap \
		--dump-logits "$W/x-$n.bin" >"$W/x-$n.json" 2>/dev/null
	args+=("$1" "$2")
	n=$((n + 1))
}
for t in q4_0 q8_0 q4_k q3_k_m q2_k q4_1 q5_0 q5_1 iq4_nl; do # q3_k_m, q2_k: the 16-row Q3_K/Q2_K tiles; q4_1 .. iq4_nl: the 4-row token tiles
	"$B/tools/gguf-gen" -o "$W/$t.gguf" --type "$t" --seed 21 >/dev/null 2>&1 && add "$PWD/$W/$t.gguf" "Hello world, again"
done
[ -f "$EDGEQ_TEST_MODELS/stories260K.gguf" ] && add "$EDGEQ_TEST_MODELS/stories260K.gguf" "Once upon a time"

kver=$(ls "$B"/vm-arm64/root/boot/vmlinuz-* | sed 's|.*/vmlinuz-||' | sort -V | tail -n 1)
ko=$(O=$B tools/vm/kmod-arm64 "$kver" 2>"$T/kmod.log")
krc=$?
if [ $krc -eq 0 ]; then
	check "edgeq.ko cross-builds for arm64 $kver warning-free" test -f "$ko"
	export EDGEQ_KMOD_ARM64=$ko
else
	tail -n 5 "$T/kmod.log"
	[ $krc -eq 77 ] || check "edgeq.ko cross-builds for arm64 $kver" false
	echo "no arm64 edgeq.ko: $(tail -n 1 "$T/kmod.log"); the VM runs without it"
fi
# (the guest loads the module itself, after the tests it must not disturb;
# run-in-vm still checks that it unloads and scans the kernel log)
tools/vm/run-in-vm --arch arm64 --no-module --timeout 700 --mem 1024 --log "$B/vm/guest-arm64.log" \
	-- "$PWD/tests/cross/guest-arm64" "$PWD/$A" "${args[@]}" >"$T/vm.log" 2>&1
rc=$?
check "the aarch64 VM ran the guest script ($(($(date +%s) - t0)) s with the cross build; exit $rc)" test $rc -eq 0 ||
	tail -n 20 "$T/vm.log"
G=$B/vm/out
check "the guest is aarch64" test "$(cat "$G/uname" 2>/dev/null)" = aarch64

if [ $bpf = 1 ]; then
	src=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["source"], d["fallback_reason"] or "")' "$G/status.json" 2>&1)
	check "BPF loads on the arm64 kernel ($src)" grep -q '^bpf' <<<"$src"
	att=$(python3 -c '
import json,sys; d=json.load(open(sys.argv[1]))
print(" ".join(p["tracepoint"] for p in d["probes"] if p["attached"]))' "$G/status.json" 2>/dev/null)
	echo "attached on arm64: $att"
	for tp in thermal:thermal_temperature power:cpu_frequency vmscan:mm_vmscan_direct_reclaim_begin; do
		check "$tp attached on arm64" grep -qw "$tp" <<<"$att"
	done
	check "a thermal pressure tracepoint attached (arm64 arch_topology)" \
		grep -qE 'thermal_pressure:thermal_pressure_update|hw_pressure:hw_pressure_update' <<<"$att"
	check "BPF_PROG_TEST_RUN selftest on arm64 ($(grep -E 'passed' "$G/selftest" | tail -n 1))" \
		grep -qE '^[0-9]+ passed, 0 failed' "$G/selftest"
else
	echo "the cross build has no BPF (no clang/bpftool here): BPF not checked"
fi
if [ -n "${EDGEQ_KMOD_ARM64:-}" ]; then
	check "the arm64 module loads and makes its queues" grep -qx npu0 "$G/kmod-devices"
	check "the arm64 module unloads after the cases" grep -qx rc=0 "$G/kmod-rmmod"
	for f in "$G"/kmod-*.log; do
		c=${f##*/kmod-}
		c=${c%.log}
		r=$(tail -n 1 "$f")
		case $r in
		rc=77) echo "kmodtest $c on arm64: skipped ($(tail -n 2 "$f" | head -n 1))" ;;
		*) check "kmodtest $c on the arm64 edgeq.ko ($r)" test "$r" = rc=0 || tail -n 5 "$f" ;;
		esac
	done
fi
check "the VM's CPU (-cpu max, i8mm) selects the neon-i8mm table" \
	grep -q 'selected kernels: neon-i8mm' "$G/unit-test_kernels.log"
for u in test_kernels test_stream test_stream_budget; do
	check "$u passes on arm64 ($(grep -E '^\[  (PASSED|FAILED) ' "$G/unit-$u.log" | tr '\n' ' '))" \
		grep -qx 'rc=0' "$G/unit-$u.log"
done
for ((i = 0; i < n; i++)); do
	m=$(basename "${args[2 * i]}")
	for w in mmap neon stream; do
		check "$m ($w): aarch64 VM = x86-64, tokens and logits" \
			bash -c "cmp -s '$W/x-$i.json' '$G/run-$i-$w.json' && cmp -s '$W/x-$i.bin' '$G/run-$i-$w.bin'"
	done
	check "$m: streamed through io_uring (no fallback said)" bash -c "! grep -q io_uring '$G/run-$i-stream.err'"
done
summary
