#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# timeout: 300
"""Differential test of the pre-tokenizers' matcher (regex.c, the hand-written
splitters) against Python's regex module, a backtracking engine, on random
ASCII texts: every implemented set of split rules, each step's matches and
gaps becoming pieces as llama.cpp splits them.

Only ASCII: above U+007F llama.cpp matches categories on "collapsed" text,
which no Unicode engine reproduces (the suite in ../shared/vocab and
test_pretok.c cover that). Left out of the alphabet: '~', a symbol to Unicode
but not to llama.cpp's \\p{S}, and U+001C..U+001F, whitespace to Python only.
Like llama.cpp, the letter subcategories (\\p{Lu} ...) are read as \\p{L}.
"""
import json
import os
import random
import subprocess
import sys

TOP = os.environ.get("EDGEQ_TOP", ".")
TOOL = os.path.join(TOP, os.environ.get("O", "build"), "tools", "pretok-split")

try:
    import regex
except ImportError:
    print("Python's regex module is not installed (Debian: python3-regex)")
    sys.exit(77)
if not os.access(TOOL, os.X_OK):
    print("%s is not built (make tools)" % TOOL)
    sys.exit(77)

# What llama.cpp's hand-written splitters implement, as plain patterns.
CUSTOM = {
    "@gpt2": r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    "@llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "@digits3": r"(?=(\d{3})+(?!\d))",
}

ALPHABET = ("aaaabcdeHIJKLZsStTdDmMrReEvVlL" + "0123456789" * 2 +
            "      \n\n\r\t\v\f'''.,!?;:-_()[]{}\"#$%&*+/<=>@\\^`|" +
            "IMGIMGABZ<>sentinel:")


def pieces(steps, text):
    cur = [text]
    for pat in steps:
        pat = CUSTOM.get(pat, pat)
        # llama.cpp reads every letter subcategory as \p{L}
        for sub in ("Lu", "Ll", "Lt", "Lm", "Lo"):
            pat = pat.replace("\\p{%s}" % sub, "\\p{L}")
        if pat.endswith("$") and not pat.endswith("\\$"):
            pat = pat[:-1] + r"\Z"  # ECMAScript's $: the end, only
        rx = regex.compile(pat)
        out = []
        for p in cur:
            pos = 0
            for m in rx.finditer(p):
                if m.start() == m.end():  # an empty match still splits
                    if m.start() > pos:
                        out.append(p[pos:m.start()])
                        pos = m.start()
                    continue
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        cur = out
    return cur


def main():
    rnd = random.Random(17)
    names = subprocess.run([TOOL, "--list"], check=True, capture_output=True,
                           text=True).stdout.split()
    texts = []
    for _ in range(400):
        n = rnd.choice([1, 2, 3, 5, 8, 13, 30, 80])
        texts.append("".join(rnd.choice(ALPHABET) for _ in range(n)))
    texts += ["it's", "IT'S", "HelloWorld", "ABCdef", "  x", "a  ", "\n\n  \n",
              "1234567", "x+=1;", "<sentinel:12>", "IMGIMGABZ", "    a  b"]
    passed = failed = 0
    for name in names:
        steps = [json.loads(l) for l in subprocess.run(
            [TOOL, "--patterns", name], check=True, capture_output=True,
            text=True).stdout.splitlines()]
        res = subprocess.run([TOOL, name], input="\0".join(texts),
                             check=True, capture_output=True, text=True)
        got = [json.loads(l) for l in res.stdout.splitlines()]
        bad = 0
        for t, g in zip(texts, got):
            want = pieces(steps, t)
            if g != want:
                if bad < 3:
                    print("  %s %r: got %r, want %r" % (name, t, g, want))
                bad += 1
        ok = len(got) == len(texts) and not bad
        print("%s - %s: %d texts%s" % ("ok" if ok else "FAIL", name,
                                       len(texts), "" if ok else ", %d differ" % bad))
        passed += ok
        failed += not ok
    print("%d passed, %d failed, 0 skipped" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
