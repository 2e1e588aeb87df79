#!/usr/bin/env bash
# edgeq tokenize: ids as llama-tokenize prints them for llama.cpp's suite
# (../shared/vocab, those checks skipped when absent), BOS and special-token
# handling, --stdin, --pieces, full models, vocabulary-only files of any
# architecture, and the refusals (unknown pre-tokenizer named, usage errors).
set -u
. "$(dirname "$0")/../lib/testlib.sh"
VOCAB=${EDGEQ_TEST_VOCAB:-$EDGEQ_TOP/../shared/vocab}
GEN=$EDGEQ_TOP/${O:-build}/tools/gguf-gen

# Small byte-level BPE vocabularies: mkvocab FILE ARCH PRE [eos] (PRE "-":
# no key; eos: tokenizer.ggml.add_eos_token with <|eot_id|> as EOS).
mkvocab() {
	/usr/bin/python3 - "$@" <<'PY'
import struct, sys
path, arch, pre = sys.argv[1:4]
eos = sys.argv[4:] == ['eos']
def s(x): x = x.encode(); return struct.pack('<Q', len(x)) + x
def kv_str(k, v): return s(k) + struct.pack('<I', 8) + s(v)
def arr_str(k, L): return s(k) + struct.pack('<IIQ', 9, 8, len(L)) + b''.join(s(x) for x in L)
def kv_u32(k, v): return s(k) + struct.pack('<II', 4, v)
def kv_bool(k, v): return s(k) + struct.pack('<IB', 7, v)
def arr_i32(k, L): return s(k) + struct.pack('<IIQ', 9, 5, len(L)) + b''.join(struct.pack('<i', x) for x in L)
bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
cs, n = bs[:], 0
for b in range(256):
    if b not in bs:
        bs.append(b); cs.append(256 + n); n += 1
toks = [chr(c) for c in cs] + ['\u0120t', 'he', '\u0120the', '<|eot_id|>']
types = [1] * (len(toks) - 1) + [3]
kvs = [kv_str('general.architecture', arch), kv_str('tokenizer.ggml.model', 'gpt2'),
       arr_str('tokenizer.ggml.tokens', toks), arr_i32('tokenizer.ggml.token_type', types),
       arr_str('tokenizer.ggml.merges', ['\u0120 t', 'h e', '\u0120t he'])]
if pre != '-':
    kvs.append(kv_str('tokenizer.ggml.pre', pre))
if eos:
    kvs += [kv_u32('tokenizer.ggml.eos_token_id', len(toks) - 1),
            kv_bool('tokenizer.ggml.add_eos_token', 1)]
open(path, 'wb').write(b'GGUF' + struct.pack('<IQQ', 3, 0, len(kvs)) + b''.join(kvs))
PY
}

# The ids of input K of a suite file, and its text.
suite_case() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import sys
f, k = sys.argv[1], int(sys.argv[2])
inp = open(f + '.inp', 'rb').read().split(b'\n__ggml_vocab_test__\n')
out = open(f + '.out').read().split('\n')
sys.stdout.buffer.write(inp[k])
sys.stderr.write('[' + ', '.join(out[k].split()) + ']\n')
PY
}

if [ -f "$VOCAB/ggml-vocab-gpt-2.gguf.inp" ]; then
	for v in llama-spm phi-3 gpt-2 deepseek-llm deepseek-coder falcon starcoder mpt; do
		f=$VOCAB/ggml-vocab-$v.gguf
		for k in 0 10 33 45; do
			suite_case "$f" $k >"$T/in" 2>"$T/want"
			"$EDGEQ" tokenize -m "$f" --no-bos --stdin <"$T/in" >"$T/got" 2>"$T/err"
			check "$v input $k: the ids llama.cpp gives" cmp -s "$T/got" "$T/want"
		done
	done
	spm=$VOCAB/ggml-vocab-llama-spm.gguf
	out=$("$EDGEQ" tokenize -m "$spm" "Hello world")
	check "SentencePiece: BOS by default" test "$out" = "[1, 15043, 3186]"
	out=$("$EDGEQ" tokenize -m "$spm" --ids --no-bos "Hello world")
	check "--no-bos" test "$out" = "[15043, 3186]"
	out=$("$EDGEQ" tokenize -m "$spm" --no-bos "<s>x")
	check "special tokens are text by default" test "$out" = "[529, 29879, 29958, 29916]"
	out=$("$EDGEQ" tokenize -m "$spm" --no-bos --parse-special "<s>x")
	check "--parse-special matches <s>" test "$out" = "[1, 921]"
	"$EDGEQ" tokenize -m "$spm" --pieces "Hello world" >"$T/p"
	check "--pieces: one line per token" test "$(wc -l <"$T/p")" -eq 3
	check "--pieces: id -> 'piece'" grep -qx "  3186 -> ' world'" "$T/p"
	check "--pieces: a control token shows its text" grep -qx "     1 -> '<s>'" "$T/p"
	gpt2=$VOCAB/ggml-vocab-gpt-2.gguf
	out=$("$EDGEQ" tokenize -m "$gpt2" "Hello world")
	check "gpt-2: no BOS unless the vocabulary asks" test "$out" = "[15496, 995]"
	out=$(printf 'Hello\nworld' | "$EDGEQ" tokenize -m "$gpt2" --stdin)
	check "--stdin keeps newlines" test "$out" = "[15496, 198, 6894]"
else
	echo "# llama.cpp's suite not in $VOCAB: its checks skipped"
fi

mkvocab "$T/frob.gguf" frobnicator gpt-2
out=$("$EDGEQ" tokenize -m "$T/frob.gguf" " the th")
check "a vocabulary of an architecture without a decoder loads" test "$out" = "[258, 256, 71]"
mkvocab "$T/eos.gguf" llama gpt-2 eos
out=$("$EDGEQ" tokenize -m "$T/eos.gguf" " the")
check "add_eos_token: EOS appended" test "$out" = "[258, 259]"
out=$("$EDGEQ" tokenize -m "$T/eos.gguf" --no-bos " the")
check "--no-bos: no EOS either" test "$out" = "[258]"
mkvocab "$T/nopre.gguf" llama -
out=$("$EDGEQ" tokenize -m "$T/nopre.gguf" "a!!")
check "no tokenizer.ggml.pre: llama.cpp's default splits" test "$out" = "[64, 0, 0]"
mkvocab "$T/unk.gguf" llama frobnicate-bpe
"$EDGEQ" tokenize -m "$T/unk.gguf" x >/dev/null 2>"$T/err"
check "unknown pre-tokenizer: exit 3" test $? -eq 3
check "unknown pre-tokenizer: named" grep -q "'frobnicate-bpe' is not a pre-tokenizer" "$T/err"
mkvocab "$T/kimi.gguf" llama kimi-k2
"$EDGEQ" tokenize -m "$T/kimi.gguf" x >/dev/null 2>"$T/err"
check "known but unimplemented pre-tokenizer: exit 3" test $? -eq 3
check "known but unimplemented pre-tokenizer: named" grep -q "'kimi-k2' (.*) is not supported" "$T/err"
"$EDGEQ" run -m "$T/frob.gguf" -p x -n 1 >/dev/null 2>"$T/err"
check "the decoder still refuses the architecture by name" grep -q "'frobnicator' is not supported" "$T/err"

if [ -x "$GEN" ]; then
	"$GEN" --shape micro --type q8_0 -o "$T/m.gguf" >/dev/null
	out=$("$EDGEQ" tokenize -m "$T/m.gguf" --no-bos "ab")
	check "a full model tokenizes" grep -Eq '^\[[0-9]+(, [0-9]+)*\]$' <<<"$out"
fi

"$EDGEQ" tokenize x >/dev/null 2>&1
check "no -m: exit 2" test $? -eq 2
"$EDGEQ" tokenize -m "$T/frob.gguf" >/dev/null 2>&1
check "no text: exit 2" test $? -eq 2
echo x | "$EDGEQ" tokenize -m "$T/frob.gguf" --stdin y >/dev/null 2>&1
check "text and --stdin: exit 2" test $? -eq 2
"$EDGEQ" tokenize -m "$T/frob.gguf" --ids --pieces x >/dev/null 2>&1
check "--ids with --pieces: exit 2" test $? -eq 2
printf 'a\0b' | "$EDGEQ" tokenize -m "$T/frob.gguf" --stdin >/dev/null 2>"$T/err"
check "a NUL byte on stdin: exit 3" test $? -eq 3
"$EDGEQ" tokenize -m "$T/none.gguf" x >/dev/null 2>"$T/err"
check "a missing file is named" grep -q none.gguf "$T/err"
summary
