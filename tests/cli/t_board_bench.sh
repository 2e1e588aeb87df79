#!/usr/bin/env bash
# tools/board-bench on a fake Jetson Orin Nano (device-tree model, L4T
# release, arm64 cpuinfo with dotprod and no i8mm, Orin thermal zones by
# type and a capped GPU devfreq): the report names the board, its CPU
# features and zones, and has one bench row per model with the decode
# efficiency; bad arguments, a missing model and an unwritable report
# directory are refused with their own exit codes.
# timeout: 300
set -u
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../pressure/fake.sh"
cd "$EDGEQ_TOP" || exit 1
B=${O:-build}
BB=tools/board-bench
[ -x "$B/tools/gguf-gen" ] || skip_all "gguf-gen not built"
"$B/tools/gguf-gen" -o "$T/tiny.gguf" --shape tiny --type q4_0 >/dev/null
"$B/tools/gguf-gen" -o "$T/tiny8.gguf" --shape tiny --type q8_0 >/dev/null
F=$T/fake
mkfake "$F"
mkdir -p "$F/proc/device-tree"
printf 'NVIDIA Jetson Orin Nano Developer Kit\0' >"$F/proc/device-tree/model"
printf 'processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n' >"$F/proc/cpuinfo"
printf '# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64\n' >"$F/nv_tegra_release"
export EDGEQ_SYSFS_ROOT=$F/sys EDGEQ_PROC_ROOT=$F/proc EDGEQ_L4T_RELEASE=$F/nv_tegra_release
"$BB" -m "$T/tiny.gguf" -m "$T/tiny8.gguf" --quick -t 1 -o "$T/r" >"$T/out" 2>"$T/err"
rc=$?
check "board-bench runs (exit 0)" test $rc -eq 0 || tail -5 "$T/err"
S=$T/r/summary.md
check "the summary names the board" grep -q '^# edgeq on NVIDIA Jetson Orin Nano Developer Kit' "$S"
check "... the L4T release" grep -q 'L4T # R36 (release), REVISION: 4.3' "$S"
check "... dotprod yes, i8mm no" grep -q 'asimddp yes, i8mm no' "$S"
check "... the zones by type" grep -q 'gpu-thermal 50.0 C' "$S"
check "... the GPU's devfreq cap as its throttle" grep -q 'gpu throttle 0.706' "$S"
check "one row per model with an efficiency" test "$(grep -cE '^\| tiny8?\.gguf \| 1 \| .* \| [0-9]+ % \|' "$S")" = 2
check "no rail said once" test "$(grep -c '^energy: no readable power rail' "$S")" = 1
check "bench JSON kept per model" python3 -c "
import json; [json.load(open('$T/r/bench-%d.json' % i))['roofline']['efficiency'] for i in (1, 2)]"
check "board.json has the memory total" python3 -c "
import json; assert json.load(open('$T/r/board.json'))['mem_total'] == 8000000 * 1024"
"$BB" -m "$T/none.gguf" -o "$T/r2" 2>"$T/e"
check "a missing model: exit 3, named" sh -c "test $? -eq 3 && grep -q \"model '$T/none.gguf' cannot be read\" '$T/e'"
"$BB" --types 'q4_0;rm' -o "$T/r3" 2>"$T/e"
check "bad --types: exit 2" test $? -eq 2
"$BB" -m "$T/tiny.gguf" -o /proc/edgeq-no/report 2>"$T/e"
check "an unwritable report directory: exit 4, named" sh -c "test $? -eq 4 && grep -q 'cannot write the report directory' '$T/e'"
summary
