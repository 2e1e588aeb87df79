#!/usr/bin/env bash
# lane: vm (tests/run: beside the other tests, after the ones before it in this lane)
# ci: required (CI=true: a skip here fails; see tests/run)
# timeout: 600
# Greedy decoding is bit-identical between x86-64 (AVX2) and aarch64 (NEON,
# the cross build run under qemu-aarch64-static): same token ids and the
# same logits, byte for byte, on tiny synthetic models of each quantized
# type (the llama-quantize mixes included) and on stories260K. Brings
# `make cross` (build-aarch64/edgeq) up to date first, unless EDGEQ_CROSS
# names an aarch64 edgeq.
# Runs with -t 1 (thread count independence is t_run.sh's job).
. "$(dirname "$0")/../lib/testlib.sh"
ARM=${EDGEQ_CROSS:-$EDGEQ_TOP/build-aarch64/edgeq}
QEMU=$(command -v qemu-aarch64-static || command -v qemu-aarch64) ||
	skip_all "qemu-aarch64 is not installed"
if [ -z "${EDGEQ_CROSS:-}" ]; then
	# bring the cross build up to date (incremental), so a stale binary
	# never compares old kernels with new ones
	command -v aarch64-linux-gnu-gcc >/dev/null ||
		skip_all "no aarch64 cross compiler (tools/install-deps)"
	make -C "$EDGEQ_TOP" cross -j2 >"$T/cross.log" 2>&1 ||
		{ tail -n 5 "$T/cross.log"; skip_all "make cross failed (arm64 libraries missing?)"; }
fi
[ -x "$ARM" ] || skip_all "no aarch64 build ($ARM): run 'make cross'"
[ "$(uname -m)" = x86_64 ] || skip_all "host is not x86-64"
GEN=${O:-build}/tools/gguf-gen
[ -x "$GEN" ] || skip_all "gguf-gen is not built"
same() { # what model prompt
	"$EDGEQ" run -m "$2" -p "$3" -n 8 -t 1 -b 4 --weights mmap --dump-logits "$T/x.bin" >"$T/x.json" &&
	timeout 120 "$QEMU" -L /usr/aarch64-linux-gnu "$ARM" run -m "$2" -p "$3" -n 8 -t 1 -b 4 \
		--weights mmap --dump-logits "$T/a.bin" >"$T/a.json" &&
	cmp -s "$T/x.json" "$T/a.json" && cmp -s "$T/x.bin" "$T/a.bin"
}
for t in q4_0 q8_0 q4_k f16 bf16 q5_k_m q3_k_m q2_k q4_1 q5_0 q5_1 iq4_nl iq4_xs; do
	"$GEN" -o "$T/$t.gguf" --type "$t" --seed 21
	check "tiny $t: x86-64 and aarch64 agree bit for bit" same "$t" "$T/$t.gguf" "Hello world, again"
done
if [ -f "$EDGEQ_TEST_MODELS/stories260K.gguf" ]; then
	check "stories260K: x86-64 and aarch64 agree bit for bit" same s "$EDGEQ_TEST_MODELS/stories260K.gguf" "Once upon a time"
fi
summary
