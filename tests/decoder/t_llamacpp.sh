#!/usr/bin/env bash
# timeout: 300
# Cross-check against llama.cpp, when a build of it is at hand
# ($EDGEQ_LLAMA_CPP, default ../llama.cpp/build/bin; skipped otherwise):
#  - prompt token ids for ~40 strings with the real 32000-piece Llama
#    SentencePiece vocabulary (a synthetic model carrying
#    $EDGEQ_TEST_MODELS/ggml-vocab-llama-spm.gguf's vocabulary);
#  - greedy text of stories260K for the first 8 tokens (later tokens meet a
#    near tie, 0.003 apart, where llama.cpp and the float64 reference differ).
. "$(dirname "$0")/../lib/testlib.sh"
LC=${EDGEQ_LLAMA_CPP:-$EDGEQ_TOP/../llama.cpp/build/bin}
[ -x "$LC/llama-completion" ] || skip_all "no llama.cpp build at $LC (set EDGEQ_LLAMA_CPP)"
VOCAB=$EDGEQ_TEST_MODELS/ggml-vocab-llama-spm.gguf
[ -f "$VOCAB" ] || skip_all "ggml-vocab-llama-spm.gguf not in \$EDGEQ_TEST_MODELS"
GEN=${O:-build}/tools/gguf-gen
"$GEN" -o "$T/lv.gguf" --type q8_0 --vocab-from "$VOCAB" --seed 2
lc() { LD_LIBRARY_PATH=$LC timeout 60 "$LC/llama-completion" -t 1 -no-cnv --no-warmup --no-escape --temp 0 "$@" </dev/null; }
# llama-completion now and then exits printing nothing on this shared,
# loaded machine; an empty answer is retried, never compared.
lc_retry() {
	local out i
	for i in 1 2 3; do
		out=$("$@")
		[ -n "$out" ] && break
		echo "  (llama.cpp printed nothing, try $i of 3)" >&2
	done
	printf '%s' "$out"
}
lc_ids1() {
	lc -m "$T/lv.gguf" -p "$1" -n 1 --verbose-prompt 2>&1 |
		LC_ALL=C sed -n '/number of tokens in prompt/,/ I $/p' |
		LC_ALL=C sed -n 's/^.* I  *\([0-9][0-9]*\) -> .*/\1/p' | paste -sd, -
}
lc_ids() { lc_retry lc_ids1 "$1"; } # prompt -> "1,2,3"
ed_ids() {
	"$EDGEQ" run -m "$T/lv.gguf" -p "$1" -n 0 --json --weights mmap --no-roofline 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin)["prompt_tokens"])))'
}
while IFS= read -r s; do
	s=$(printf '%b' "$s")
	a=$(lc_ids "$s")
	b=$(ed_ids "$s")
	if [ -z "$a" ]; then
		echo "skip - tokens of '$s': llama.cpp printed nothing 3 times (not compared)"
	elif [ "$a" = "$b" ]; then
		check "tokens of '$s'" true
	else
		echo "  llama.cpp: $a"
		echo "  edgeq:     $b"
		check "tokens of '$s'" false
	fi
done <<'EOF2'
Hello world
 Hello world
Hello World!
  two leading spaces
trailing spaces   
The quick brown fox jumps over the lazy dog.
It's a beautiful day, isn't it?
I've got 3,141,592 apples (and 2.5 pears).
e-mail: someone@example.com; url: https://example.org/a?b=c&d=e
tabs\tand\nnewlines\n\nhere
carriage\r\nreturns
Ünïcödé àccents naïve café
Привет, мир! Как дела?
日本語のテキストです。
中文测试，标点符号。
한국어 문장입니다.
Ελληνικά γράμματα
עברית מימין לשמאל
العربية من اليمين
emoji 🦙🚀👍🏽 and ❤️
math: ∑ x² ≤ ∞, √2 ≈ 1.414
code: for (int i = 0; i < n; i++) { x[i] += 1; }
<html><body class="x">hi</body></html>
$$$ %%% ^^^ ~~~ ``` ||| \\\\
w048 7tuijk dsdfhu
нещо на Български
 this is 🦙.cpp
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
ab ab ab ab ab ab ab ab
1234567890 0987654321
Mixed CASE WoRdS and snake_case_names
A
.
   
EOF2
if [ -f "$EDGEQ_TEST_MODELS/stories260K.gguf" ]; then
	a=$(lc_retry lc -m "$EDGEQ_TEST_MODELS/stories260K.gguf" -p "Once upon a time" -n 8 2>/dev/null)
	b=$("$EDGEQ" run -m "$EDGEQ_TEST_MODELS/stories260K.gguf" -p "Once upon a time" -n 8 --temp 0 --weights mmap --no-roofline 2>/dev/null)
	a=$(printf '%s' "$a" | sed 's/^ //' | tr -d '\n') b=$(printf '%s' "$b" | tr -d '\n')
	if [ -z "$a" ]; then
		echo "skip - stories260K greedy text: llama.cpp printed nothing 3 times (not compared)"
	else
		check "stories260K: greedy text of 8 tokens as llama.cpp's ('$b')" test "$a" = "$b"
	fi
fi
summary
