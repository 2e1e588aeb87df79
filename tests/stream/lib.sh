# Helpers for the weight-streamer suite: synthetic models and logit dumps.
# Sourced after tests/lib/testlib.sh.
TOP=${EDGEQ_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
GEN=$TOP/${O:-build}/tools/gguf-gen
NO_URING=$TOP/${O:-build}/tools/no-uring
PROMPT="The quick brown fox jumps over the lazy dog, 12345"

[ -x "$GEN" ] || skip_all "no $GEN (make tools)"
[ -x "$EDGEQ" ] || skip_all "no $EDGEQ (make)"

# gen NAME ARGS...: a synthetic model in $T (made once per test)
gen() {
	local name=$1; shift
	[ -f "$T/$name.gguf" ] || "$GEN" -o "$T/$name.gguf" "$@" >/dev/null
}

# dump MODEL OUT [RUN ARGS...]: greedy logits of every step into OUT;
# stderr goes to OUT.err
dump() {
	local model=$1 out=$2; shift 2
	"$EDGEQ" run -m "$model" -p "$PROMPT" -n 12 --temp 0 -t 2 --no-roofline \
		--ctx-size 128 --dump-logits "$out" "$@" >/dev/null 2>"$out.err"
}
