#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""
Reference chat-template renderer: Jinja2 configured the way Hugging Face
transformers configures it (chat_template_utils: an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension and a
{% generation %} block tag, raise_exception, strftime_now, and a tojson filter
that keeps non-ASCII and takes json.dumps' options). Written for edgeq's tests,
which compare `edgeq template` against it byte for byte.

  ref_render.py --batch OUTDIR NOW TEMPLATE... -- CONV.json...

renders every template for every conversation, with add_generation_prompt
off and on, into OUTDIR/<template>.<conv>.<0|1>.out, or .err holding the
exception's class name and message when Jinja2 refuses it.

  ref_render.py --compare REFDIR GOTDIR

  ref_render.py --model GGUF CONV.json NOW

renders a GGUF's tokenizer.chat_template, with its BOS and EOS token texts,
for CONV.json with add_generation_prompt on, to stdout (exit 3 when Jinja2
refuses, 4 when the file has no template).

--compare compares the batch outputs with edgeq's (build/tools/template-render): one line per
template, "ok NAME N" or "FAIL NAME N" followed by what differs. A render
Jinja2 refuses must be refused too, a raise_exception with its message.
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers
    uses it to mark assistant tokens; the text is the same)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def load_conv(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if isinstance(doc, list):
        return doc, None
    return doc["messages"], doc.get("tools")


def render(env, source, messages, tools, agp, bos="<s>", eos="</s>"):
    t = env.from_string(source)
    return t.render(messages=messages, tools=tools, documents=None,
                    add_generation_prompt=agp, bos_token=bos, eos_token=eos)


def compare(refdir, gotdir):
    per = {}
    for name in sorted(os.listdir(refdir)):
        base, ext = name.rsplit(".", 1)
        tn = base.rsplit(".", 2)[0]
        ok, why = True, None
        got_out = os.path.join(gotdir, base + ".out")
        got_err = os.path.join(gotdir, base + ".err")
        with open(os.path.join(refdir, name), "rb") as f:
            ref = f.read()
        if ext == "out":
            if not os.path.exists(got_out):
                ok = False
                why = "edgeq refused: " + open(got_err, errors="replace").read()[:300] \
                    if os.path.exists(got_err) else "no output"
            else:
                got = open(got_out, "rb").read()
                if got != ref:
                    ok = False
                    at = next((i for i in range(min(len(got), len(ref))) if got[i] != ref[i]),
                              min(len(got), len(ref)))
                    why = "differs at byte %d: Jinja2 %r, edgeq %r" % (
                        at, ref[max(0, at - 40):at + 40], got[max(0, at - 40):at + 40])
        else:
            msg = ref.decode("utf-8", "replace").strip()
            if not os.path.exists(got_err):
                ok, why = False, "Jinja2 refused (%s) but edgeq rendered it" % msg[:200]
            elif msg.startswith("TemplateError: "):
                want = "raise_exception: " + msg[len("TemplateError: "):]
                got = open(got_err, encoding="utf-8", errors="replace").read()
                if want not in got:
                    ok, why = False, "raise_exception message: want %r, got %r" % (want, got)
        n, fails = per.get(tn, (0, []))
        if not ok:
            fails.append("%s: %s" % (base, why))
        per[tn] = (n + 1, fails)
    for tn, (n, fails) in sorted(per.items()):
        print("%s %s %d" % ("FAIL" if fails else "ok", tn, n))
        for f in fails[:6]:
            print("   " + f)


def gguf_kv(path):
    """The metadata of a GGUF file (versions 2 and 3), as a dict."""
    import struct
    b = open(path, "rb").read()
    if b[:4] != b"GGUF":
        raise ValueError("not a GGUF file")
    nkv = struct.unpack_from("<Q", b, 16)[0]
    fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
            10: "Q", 11: "q", 12: "d"}

    def value(t, o):
        if t == 8:
            n = struct.unpack_from("<Q", b, o)[0]
            return b[o + 8:o + 8 + n].decode("utf-8", "surrogateescape"), o + 8 + n
        if t == 9:
            at, n = struct.unpack_from("<IQ", b, o)
            o += 12
            out = []
            for _ in range(n):
                v, o = value(at, o)
                out.append(v)
            return out, o
        return struct.unpack_from("<" + fmts[t], b, o)[0], o + struct.calcsize(fmts[t])

    kv, o = {}, 24
    for _ in range(nkv):
        k, o = value(8, o)
        t = struct.unpack_from("<I", b, o)[0]
        kv[k], o = value(t, o + 4)
    return kv


def render_model(path, conv, now):
    kv = gguf_kv(path)
    src = kv.get("tokenizer.chat_template")
    if src is None:
        sys.exit(4)
    toks = kv.get("tokenizer.ggml.tokens", [])
    tok = {}
    for name in ("bos", "eos"):
        i = kv.get("tokenizer.ggml.%s_token_id" % name)
        if i is not None and i < len(toks):
            tok[name + "_token"] = toks[i]
    messages, tools = load_conv(conv)
    try:
        out = make_env(now).from_string(src).render(
            messages=messages, tools=tools, documents=None, add_generation_prompt=True, **tok)
    except Exception as e:
        print("%s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(3)
    sys.stdout.buffer.write(out.encode("utf-8", "surrogateescape"))


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "--model":
        return render_model(a[1], a[2], datetime.datetime.strptime(a[3], "%Y-%m-%d"))
    if len(a) == 3 and a[0] == "--compare":
        return compare(a[1], a[2])
    if len(a) < 4 or a[0] != "--batch" or "--" not in a:
        sys.exit(__doc__)
    outdir, now = a[1], datetime.datetime.strptime(a[2], "%Y-%m-%d")
    sep = a.index("--")
    templates, convs = a[3:sep], a[sep + 1:]
    env = make_env(now)
    for tp in templates:
        with open(tp, encoding="utf-8", newline="") as f:
            src = f.read()
        tn = os.path.basename(tp).rsplit(".", 1)[0]
        for cp in convs:
            cn = os.path.basename(cp).rsplit(".", 1)[0]
            messages, tools = load_conv(cp)
            for agp in (0, 1):
                base = os.path.join(outdir, "%s.%s.%d" % (tn, cn, agp))
                try:
                    out = render(env, src, messages, tools, bool(agp))
                    with open(base + ".out", "wb") as f:
                        f.write(out.encode("utf-8", "surrogatepass"))
                except Exception as e:
                    with open(base + ".err", "w", encoding="utf-8") as f:
                        f.write("%s: %s\n" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
