#!/usr/bin/env bash
# timeout: 500
# libFuzzer on the GGUF reader (with the tokenizer loader behind it), on
# both tokenizers, on the chat-template interpreter (templates and
# conversations), and on the whole model loader plus two decode steps, under ASan+UBSan, for a bounded time each
# (EDGEQ_FUZZ_SECONDS, default 5 in make check; `make fuzz` gives each 300). Any finding fails the test; the crashing
# input is kept in $O/fuzz/ for a look.
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
CLANG=${CLANG:-clang}
secs=${EDGEQ_FUZZ_SECONDS:-5}
out=$EDGEQ_TOP/${O:-build}/fuzz
mkdir -p "$out"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }' >"$T/probe.c"
$CLANG -fsanitize=fuzzer,address,undefined "$T/probe.c" -o "$T/probe" 2>/dev/null ||
	skip_all "$CLANG cannot build libFuzzer binaries (-fsanitize=fuzzer)"
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
 -fno-omit-frame-pointer -D_GNU_SOURCE -std=gnu11 -Iinclude -Iinclude/uapi -Iuserspace/lib  -Itests/lib -DEDGEQ_VERSION=\"fuzz\" -DEDGEQ_COMMIT=\"fuzz\""
LIB="userspace/lib/model/gguf.c userspace/lib/model/vocab.c userspace/lib/model/spm.c
 userspace/lib/model/pretok.c userspace/lib/model/regex.c userspace/lib/model/unicode.c userspace/lib/model/unicode_table.c
 userspace/lib/model/special.c
 userspace/lib/model/bpe.c userspace/lib/core/core.c tests/lib/gguf_build.c"
for h in gguf tokenize; do
	if ! $CLANG $FLAGS tests/fuzz/fuzz_$h.c $LIB -o "$out/fuzz_$h" -lm 2>"$T/cc.log"; then
		cat "$T/cc.log"
		check "build fuzz_$h" false
	fi
done
# The whole loader and forward pass: the decoder's sources are instrumented;
# the kernels and everything else come from libedgeq.a as built.
MODEL_SRCS=$(ls userspace/lib/model/*.c)
LIBA=$EDGEQ_TOP/${O:-build}/libedgeq.a
if [ -f "$LIBA" ]; then
	mkdir -p "$T/mo"
	ok=1
	for f in $MODEL_SRCS; do
		$CLANG $FLAGS -ffp-contract=off -c "$f" \
			-o "$T/mo/$(echo "$f" | tr / _).o" 2>>"$T/ccm.log" || ok=0
	done
	[ $ok = 1 ] && $CLANG $FLAGS tests/fuzz/fuzz_model.c "$T"/mo/*.o "$LIBA" \
		$(pkg-config --libs liburing libbpf hwloc jansson libmicrohttpd libcurl libsodium inih libsystemd 2>/dev/null) \
		-lnuma -lm -pthread -o "$out/fuzz_model" 2>>"$T/ccm.log" || ok=0
	if [ $ok = 0 ]; then
		tail -n 20 "$T/ccm.log"
		check "build fuzz_model" false
	fi
fi
# The template interpreter: its sources and the JSON reader it uses.
if ! $CLANG $FLAGS tests/fuzz/fuzz_template.c userspace/lib/template/*.c $LIB \
	-o "$out/fuzz_template" -ljansson -lm 2>"$T/cct.log"; then
	cat "$T/cct.log"
	check "build fuzz_template" false
fi
[ -x "$out/fuzz_gguf" ] && [ -x "$out/fuzz_tokenize" ] || { summary; exit 1; }

# Seed corpus, made here: small valid files of each kind.
mkdir -p "$T/c-gguf" "$T/c-tok" "$T/c-model"
GEN=$EDGEQ_TOP/${O:-build}/tools/gguf-gen
if [ -x "$GEN" ]; then
	"$GEN" --shape micro --type f32 --tied -o "$T/c-model/f32"
	"$GEN" --shape micro --type q8_0 -o "$T/c-model/q8_0"
	"$GEN" --shape micro --type q4_0 --arch qwen2 -o "$T/c-model/qwen2"
fi
/usr/bin/python3 - "$T/c-gguf" <<'PY'
import struct, sys
d = sys.argv[1]
def s(x): x = x.encode() if isinstance(x, str) else x; return struct.pack('<Q', len(x)) + x
def kv_str(k, v): return s(k) + struct.pack('<I', 8) + s(v)
def kv_u32(k, v): return s(k) + struct.pack('<I', 4) + struct.pack('<I', v)
def arr_str(k, L): return s(k) + struct.pack('<IIQ', 9, 8, len(L)) + b''.join(s(x) for x in L)
def arr(k, t, fmt, L): return s(k) + struct.pack('<IIQ', 9, t, len(L)) + b''.join(struct.pack(fmt, x) for x in L)
def gguf(kvs, tensors=(), data=b''):
    h = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs)
    for name, ne, t, off in tensors:
        h += s(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', x) for x in ne) + struct.pack('<IQ', t, off)
    h += b'\0' * ((32 - len(h) % 32) % 32)
    return h + data
spm = ['<unk>', '<s>', '</s>'] + ['<0x%02X>' % i for i in range(256)] + ['\u2581', '\u2581t', 'he', '\u2581the', 'in']
open(d + '/spm', 'wb').write(gguf([kv_str('general.architecture', 'llama'), kv_str('tokenizer.ggml.model', 'llama'),
    arr_str('tokenizer.ggml.tokens', spm), arr('tokenizer.ggml.scores', 6, '<f', [-float(i) for i in range(len(spm))]),
    arr('tokenizer.ggml.token_type', 5, '<i', [2, 3, 3] + [6] * 256 + [1] * 5), kv_u32('tokenizer.ggml.bos_token_id', 1)]))
bpe = [chr(c) for c in range(33, 127)] + ['\u0120', '\u0120t', 'he', '<|eot_id|>']
open(d + '/bpe', 'wb').write(gguf([kv_str('tokenizer.ggml.model', 'gpt2'), kv_str('tokenizer.ggml.pre', 'llama-bpe'),
    arr_str('tokenizer.ggml.tokens', bpe), arr_str('tokenizer.ggml.merges', ['\u0120 t', 'h e'])]))
open(d + '/tensors', 'wb').write(gguf([kv_u32('general.alignment', 32), kv_str('general.architecture', 'llama')],
    [('a', [32, 2], 0, 0), ('b', [32], 8, 256), ('c', [256], 12, 320)], b'\1' * 512))
PY
# templates: the feature templates, and real ones when ../shared has them
mkdir -p "$T/c-tmpl"
cp tests/template/cases/*.jinja "$T/c-tmpl/"
TDIR=${EDGEQ_TEST_TEMPLATES:-$EDGEQ_TOP/../shared/templates}
[ -d "$TDIR" ] && cp "$TDIR"/*.jinja "$T/c-tmpl/"
printf '{%% for m in messages %%}{{ m.role }}{%% endfor %%}\0[{"role": "user", "content": [1, {"a": null}]}]' >"$T/c-tmpl/conv"
printf 'Hello world' >"$T/c-tok/a"
printf ' the\tin  12345 \xf0\x9f\xa6\x99\n\n<s>x' >"$T/c-tok/b"
printf "it's they'RE <|eot_id|> \xe2\x96\x81" >"$T/c-tok/c"

harnesses="gguf tokenize"
[ -x "$out/fuzz_template" ] && harnesses="$harnesses template"
[ -x "$out/fuzz_model" ] && [ -x "$GEN" ] && harnesses="$harnesses model"
for h in $harnesses; do
	case $h in gguf) c=$T/c-gguf ;; model) c=$T/c-model ;; template) c=$T/c-tmpl ;; *) c=$T/c-tok ;; esac
	if (cd "$out" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
		./fuzz_$h -max_total_time="$secs" -max_len=131072 -rss_limit_mb=1024 \
		-malloc_limit_mb=512 -timeout=10 -print_final_stats=1 "$c" \
		>"$T/$h.log" 2>&1); then
		check "fuzz_$h: ${secs}s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$T/$h.log" | grep -o '[0-9]*$') runs, no findings" true
	else
		tail -n 30 "$T/$h.log"
		check "fuzz_$h: no findings (artifacts in $out)" false
	fi
done
summary
