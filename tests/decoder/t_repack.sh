#!/usr/bin/env bash
# timeout: 300
# Weights repacked at load (16-row groups, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K,
# Q5_0, Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q3_K, Q2_K): the logits of
# every position are bit-identical to the file layout's (--no-repack) and
# to the scalar oracle's, at 1 and 2 threads, for decode and for prompts
# past the 8-token tile and (30 tokens) the K-quants' prepared tiles; the JSON says what was packed, and each case that
# keeps the file layout says why (asked not to, streamed weights, a budget
# the packed copy would exceed, a type with no packed form, kernels
# without one).
. "$(dirname "$0")/../lib/testlib.sh"
GEN=${O:-build}/tools/gguf-gen
[ -x "$GEN" ] || skip_all "gguf-gen is not built"
P="The quick brown fox jumps over the lazy dog and runs far away from home"
gen() { "$GEN" -o "$T/$1.gguf" "${@:2}" >/dev/null 2>&1 || check "gguf-gen $*" false; }
gen q4_0 --type q4_0 --seed 21
gen q8_0 --type q8_0 --seed 22 --arch qwen3
gen q4_k --type q4_k --seed 23
gen q6_k --type q6_k --seed 24
gen f16 --type f16 --seed 26
# Q5_K_M: Q5_K matrices, Q6_K where llama-quantize puts them
gen q5_k --type q5_k_m --seed 25 --arch gemma3
gen q5_0 --type q5_0 --seed 27
gen q4_1 --type q4_1 --seed 28 --arch qwen2
gen q5_1 --type q5_1 --seed 29
gen iq4_nl --type iq4_nl --seed 30
gen iq4_xs --type iq4_xs --seed 31 --arch qwen3
# Q3_K_M: Q3_K matrices, Q4_K/Q5_K/Q6_K where llama-quantize puts them
gen q3_k --type q3_k_m --seed 32
gen q2_k --type q2_k --seed 33 --arch qwen2

repack_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timings']['repack'])" "$1"; }

"$EDGEQ" run -m "$T/q4_0.gguf" -p hi -n 1 --temp 0 --json --no-roofline >"$T/probe" 2>/dev/null
if grep -q 'have no packed layout' "$T/probe"; then
	skip_all "the selected kernels have no packed layout ($(repack_of "$T/probe"))"
fi

for ty in q4_0 q8_0 q4_k q5_k q6_k q5_0 q4_1 q5_1 iq4_nl iq4_xs q3_k q2_k; do
	m=$T/$ty.gguf
	case $ty in q4_k | q5_k | q6_k | q5_0 | q4_1 | q5_1 | iq4_nl | iq4_xs | q3_k | q2_k)
		if ! "$EDGEQ" run -m "$m" -p hi -n 1 --json --no-roofline 2>/dev/null |
			grep -q '"repack": *"[0-9]* matrices'; then
			echo "ok - $ty: # skip: the selected kernels do not pack it"
			continue
		fi ;;
	esac
	for t in 1 2; do
		"$EDGEQ" run -m "$m" -p "$P" -n 12 -t $t -b 11 --temp 0 --no-roofline \
			--dump-logits "$T/$ty-p$t" >/dev/null 2>&1
		"$EDGEQ" run -m "$m" -p hi -n 1 -t $t --json --no-roofline >"$T/$ty-p$t.j" 2>/dev/null
		check "$ty -t $t: runs packed" grep -q '"repack": *"[0-9]* matrices in 16-row groups' "$T/$ty-p$t.j"
		"$EDGEQ" run -m "$m" -p "$P" -n 12 -t $t -b 11 --temp 0 --no-roofline --no-repack \
			--dump-logits "$T/$ty-f$t" >/dev/null 2>&1
		"$EDGEQ" run -m "$m" -p hi -n 1 -t $t --json --no-roofline --no-repack >"$T/$ty-f$t.j" 2>/dev/null
		check "$ty -t $t --no-repack: says so" grep -q '"repack": *"off: asked not to"' "$T/$ty-f$t.j"
		check "$ty -t $t: logits bit-identical packed and not" cmp -s "$T/$ty-p$t" "$T/$ty-f$t"
	done
	# a 30-token prompt in one batch: the K-quants' prepared 8-token tiles
	"$EDGEQ" run -m "$m" -p "$P $P" -n 2 -t 2 -b 64 --temp 0 --no-roofline \
		--dump-logits "$T/$ty-lp" >/dev/null 2>&1
	"$EDGEQ" run -m "$m" -p "$P $P" -n 2 -t 2 -b 64 --temp 0 --no-roofline --no-repack \
		--dump-logits "$T/$ty-lf" >/dev/null 2>&1
	check "$ty: a long prompt's logits bit-identical packed and not" \
		cmp -s "$T/$ty-lp" "$T/$ty-lf"
	check "$ty: the long prompt's logits are not empty" test -s "$T/$ty-lp"
	EDGEQ_KERNELS=scalar "$EDGEQ" run -m "$m" -p "$P $P" -n 2 -t 2 -b 64 --temp 0 --no-roofline \
		--dump-logits "$T/$ty-ls" >/dev/null 2>&1
	check "$ty: a long prompt's packed logits equal the scalar oracle's" \
		cmp -s "$T/$ty-lp" "$T/$ty-ls"
	EDGEQ_KERNELS=scalar "$EDGEQ" run -m "$m" -p "$P" -n 12 -t 2 -b 11 --temp 0 --no-roofline \
		--dump-logits "$T/$ty-s" >/dev/null 2>&1
	EDGEQ_KERNELS=scalar "$EDGEQ" run -m "$m" -p hi -n 1 --json --no-roofline >"$T/$ty-s.j" 2>/dev/null
	check "$ty scalar: no packed layout, said" grep -q '"repack": *"off: the scalar kernels have no packed layout"' "$T/$ty-s.j"
	check "$ty: packed logits equal the scalar oracle's" cmp -s "$T/$ty-p2" "$T/$ty-s"
	check "$ty: the logits are not empty" test -s "$T/$ty-s"
	EDGEQ_NO_REPACK=1 "$EDGEQ" run -m "$m" -p hi -n 1 --json --no-roofline >"$T/e.j" 2>/dev/null
	check "$ty: EDGEQ_NO_REPACK=1 keeps the layout" grep -q '"repack": *"off: asked not to"' "$T/e.j"
done

m=$T/q4_0.gguf
"$EDGEQ" run -m "$m" -p "$P" -n 12 -t 2 -b 11 --temp 0 --no-roofline --weights stream \
	--dump-logits "$T/st" >/dev/null 2>&1
"$EDGEQ" run -m "$m" -p hi -n 1 --json --no-roofline --weights stream >"$T/st.j" 2>/dev/null
check "streamed weights: not packed, said" grep -q '"repack": *"off: the weights are streamed, not mapped"' "$T/st.j"
check "streamed weights: the same logits" cmp -s "$T/st" "$T/q4_0-p2"
"$EDGEQ" run -m "$m" -p hi -n 2 --temp 0 --json --no-roofline --weights mmap --weights-budget 100000 >"$T/b.j" 2>/dev/null
check "a budget the packed copy exceeds: not packed, said" grep -q '"repack": *"off: [0-9]* MiB packed would exceed the 0 MiB budget"' "$T/b.j"
"$EDGEQ" run -m "$m" -p hi -n 2 --temp 0 --json --no-roofline >"$T/a.j" 2>/dev/null
check "auto weights: mapped to pack" grep -q '"weights_why": *"mapped to repack' "$T/a.j"
"$EDGEQ" run -m "$T/f16.gguf" -p hi -n 2 --temp 0 --json --no-roofline >"$T/k.j" 2>/dev/null
check "F16: no packed form, said" grep -q '"repack": *"off: no matrix of a type the .* kernels pack"' "$T/k.j"
"$EDGEQ" run -m "$m" -p hi -n 2 --temp 0 --no-roofline 2>"$T/err" >/dev/null
check "the figures line names the repack" grep -q '| repack [0-9]* matrices in 16-row groups' "$T/err"
# The AVX2 table (x86 without AVX-512) packs every type the AVX-512 table packs, with
# vpmaddubsw and, where the CPU has it, AVX-VNNI: each form's logits, a
# prompt in 4-token tiles and decode, equal the scalar oracle's.
if grep -q 'avx2' /proc/cpuinfo 2>/dev/null &&
	EDGEQ_KERNELS=avx2 "$EDGEQ" run -m "$T/q4_0.gguf" -p hi -n 1 --json --no-roofline 2>/dev/null |
	grep -q '"repack": *"[0-9]* matrices'; then
	vnni=0
	grep -qw avx_vnni /proc/cpuinfo && vnni="1 0"
	for v in $vnni; do
		for ty in q4_0 q8_0 iq4_nl q5_0 q4_1 q5_1 q4_k q5_k q6_k iq4_xs q3_k q2_k; do
			EDGEQ_AVX_VNNI=$v EDGEQ_KERNELS=avx2 "$EDGEQ" run -m "$T/$ty.gguf" -p "$P" -n 12 -t 2 -b 11 \
				--temp 0 --no-roofline --dump-logits "$T/a$v-$ty" >/dev/null 2>&1
			check "avx2 (EDGEQ_AVX_VNNI=$v) $ty: packed logits equal the scalar oracle's" \
				cmp -s "$T/a$v-$ty" "$T/$ty-s"
			EDGEQ_AVX_VNNI=$v EDGEQ_KERNELS=avx2 "$EDGEQ" run -m "$T/$ty.gguf" -p "$P $P" -n 2 -t 2 -b 64 \
				--temp 0 --no-roofline --dump-logits "$T/a$v-$ty-l" >/dev/null 2>&1
			check "avx2 (EDGEQ_AVX_VNNI=$v) $ty: a long prompt's logits equal the scalar oracle's" \
				cmp -s "$T/a$v-$ty-l" "$T/$ty-ls"
		done
	done
	EDGEQ_KERNELS=avx2 "$EDGEQ" run -m "$T/f16.gguf" -p hi -n 1 --json --no-roofline >"$T/a.j" 2>/dev/null
	check "avx2: F16 keeps the file layout, said" \
		grep -q '"repack": *"off: no matrix of a type the avx2 kernels pack"' "$T/a.j"
else
	echo "ok - # skip: no AVX2 table on this CPU"
fi
summary
