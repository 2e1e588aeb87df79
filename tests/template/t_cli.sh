#!/usr/bin/env bash
# timeout: 120
# edgeq template as a command: -m MODEL reads tokenizer.chat_template and
# the BOS/EOS texts from a GGUF (a vocabulary-only file is enough), the
# options, and each failure with its exit status: usage 2, a refused
# template or conversation 3 (raise_exception with its message), a limit 4.
. "$(dirname "$0")/../lib/testlib.sh"
cd "$EDGEQ_TOP" || exit 1
[ -x "$EDGEQ" ] || skip_all "$EDGEQ is not built"
/usr/bin/python3 - "$T" <<'PY'
import struct, sys
d = sys.argv[1]
def s(x): x = x.encode(); return struct.pack('<Q', len(x)) + x
def kv_str(k, v): return s(k) + struct.pack('<I', 8) + s(v)
def kv_u32(k, v): return s(k) + struct.pack('<I', 4) + struct.pack('<I', v)
def arr_str(k, L): return s(k) + struct.pack('<IIQ', 9, 8, len(L)) + b''.join(s(x) for x in L)
def gguf(kvs):
    h = b'GGUF' + struct.pack('<IQQ', 3, 0, len(kvs)) + b''.join(kvs)
    return h + b'\0' * ((32 - len(h) % 32) % 32)
toks = ['<unk>', '<|begin|>', '<|end|>', 'a', 'b']
tmpl = ("{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}\n"
        "{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}")
base = [kv_str('general.architecture', 'llama'), kv_str('tokenizer.ggml.model', 'llama'),
        arr_str('tokenizer.ggml.tokens', toks), kv_u32('tokenizer.ggml.bos_token_id', 1),
        kv_u32('tokenizer.ggml.eos_token_id', 2)]
open(d + '/with.gguf', 'wb').write(gguf(base + [kv_str('tokenizer.chat_template', tmpl)]))
open(d + '/without.gguf', 'wb').write(gguf(base))
PY
printf '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]' >"$T/m.json"
printf '{"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "t"}], "other": 1}' >"$T/obj.json"

out=$("$EDGEQ" template -m "$T/with.gguf" --messages "$T/m.json" --add-generation-prompt)
check "-m: the GGUF's template with its BOS/EOS texts" \
	[ "$out" = "$(printf '<|begin|>[user] hi<|end|>\n[assistant] yo<|end|>\n[assistant] ')" ]
out=$("$EDGEQ" template -m "$T/with.gguf" --messages "$T/m.json" --bos B --eos E)
check "--bos and --eos override the model's" \
	[ "$out" = "$(printf 'B[user] hiE\n[assistant] yoE\n')" ]
printf '{{ tools|length }}{{ messages[0].content }}{{ strftime_now("%%d %%b %%Y") }}' >"$T/t.jinja"
out=$("$EDGEQ" template --template "$T/t.jinja" --messages "$T/obj.json" --now 2024-02-29)
check "an object with messages and tools; --now" [ "$out" = "1x29 Feb 2024" ]
printf '{{ tools is none }}|{{ bos_token is defined }}' >"$T/n.jinja"
out=$("$EDGEQ" template --template "$T/n.jinja" --messages "$T/m.json")
check "no tools: none; no --bos with --template: undefined" [ "$out" = "True|False" ]

status() { # want-status command... (stdout must stay empty on failure)
	local want=$1 rc
	shift
	"$@" >"$T/so" 2>"$T/se"
	rc=$?
	[ $rc = "$want" ] && [ ! -s "$T/so" ] && [ -s "$T/se" ] && return 0
	echo "  exit $rc (want $want): $(head -c 200 "$T/se")"
	return 1
}
printf '{{ raise_exception("roles must alternate") }}' >"$T/raise.jinja"
check "raise_exception: exit 3 with its message" \
	status 3 "$EDGEQ" template --template "$T/raise.jinja" --messages "$T/m.json"
check "  ... the message on stderr" grep -q "raise_exception: roles must alternate" "$T/se"
printf '{%% for m in messages %%}' >"$T/syntax.jinja"
check "a syntax error: exit 3" status 3 "$EDGEQ" template --template "$T/syntax.jinja" --messages "$T/m.json"
check "  ... named as Jinja2 names it" grep -q "TemplateSyntaxError" "$T/se"
printf '{{ messages[0].nope.deeper }}' >"$T/undef.jinja"
check "an undefined attribute: exit 3" status 3 "$EDGEQ" template --template "$T/undef.jinja" --messages "$T/m.json"
printf '{%% set r = range(1000) %%}{%% for i in r %%}{%% for j in r %%}{%% for k in r %%}{%% endfor %%}{%% endfor %%}{%% endfor %%}' >"$T/steps.jinja"
check "a runaway loop: exit 4 (step limit)" status 4 "$EDGEQ" template --template "$T/steps.jinja" --messages "$T/m.json"
check "  ... said" grep -q "step limit" "$T/se"
printf '{%% for i in range(100000) %%}{{ "x" * 100 }}{%% endfor %%}' >"$T/big.jinja"
check "a huge output: exit 4 (output limit)" status 4 "$EDGEQ" template --template "$T/big.jinja" --messages "$T/m.json"
check "a model without a template: exit 3" status 3 "$EDGEQ" template -m "$T/without.gguf" --messages "$T/m.json"
check "  ... said" grep -q "no tokenizer.chat_template" "$T/se"
check "not a GGUF: refused" status 3 "$EDGEQ" template -m "$T/m.json" --messages "$T/m.json"
printf '[{"role": ' >"$T/bad.json"
check "malformed messages JSON: exit 3" status 3 "$EDGEQ" template --template "$T/t.jinja" --messages "$T/bad.json"
printf '{"messages": "hi"}' >"$T/bad2.json"
check "messages not a list: exit 3" status 3 "$EDGEQ" template --template "$T/t.jinja" --messages "$T/bad2.json"
check "no such template file: exit 1" status 1 "$EDGEQ" template --template "$T/none.jinja" --messages "$T/m.json"
check "no such messages file: exit 1" status 1 "$EDGEQ" template --template "$T/t.jinja" --messages "$T/none.json"
check "both -m and --template: exit 2" status 2 "$EDGEQ" template -m "$T/with.gguf" --template "$T/t.jinja" --messages "$T/m.json"
check "neither: exit 2" status 2 "$EDGEQ" template --messages "$T/m.json"
check "no --messages: exit 2" status 2 "$EDGEQ" template --template "$T/t.jinja"
check "a bad --now: exit 2" status 2 "$EDGEQ" template --template "$T/t.jinja" --messages "$T/m.json" --now 2024-13-45
check "a stray argument: exit 2" status 2 "$EDGEQ" template --template "$T/t.jinja" --messages "$T/m.json" extra

# Real vocabularies (../shared/vocab) that carry a chat template: -m renders
# what Jinja2 renders from the same GGUF's template and token texts.
VDIR=${EDGEQ_TEST_VOCAB:-$EDGEQ_TOP/../shared/vocab}
PY=/usr/bin/python3
n=0
if [ -d "$VDIR" ] && $PY -c 'import jinja2' 2>/dev/null; then
	for f in "$VDIR"/*.gguf; do
		$PY tests/template/ref_render.py --model "$f" tests/template/conv/multiturn.json \
			2026-08-15 >"$T/ref" 2>/dev/null
		[ $? = 4 ] && continue
		"$EDGEQ" template -m "$f" --messages tests/template/conv/multiturn.json \
			--add-generation-prompt --now 2026-08-15 >"$T/got" 2>/dev/null
		check "-m $(basename "$f"): as Jinja2 renders its template" cmp -s "$T/ref" "$T/got"
		n=$((n + 1))
	done
fi
[ $n -gt 0 ] || echo "note: no GGUF with a chat template in $VDIR"
summary
