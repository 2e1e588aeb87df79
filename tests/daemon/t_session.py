#!/usr/bin/env python3
# edgeq serve through the engine session: speculative decoding (--draft
# lookup / layers:1 / a model) keeps greedy answers identical and reports
# its figures in /metrics; a draft model with another vocabulary fails the
# load with a clear message; --kv-type q8_0 serves; --context-shift lets an
# answer run past --ctx-size; bad values are usage errors.
# timeout: 180
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import EDGEQ, O, TMP, TOP, Daemon, model_path, run_tests, value  # noqa: E402

PROMPT = "one two three four one two three four one two three four one two"


def answer(d, n=24, prompt=PROMPT):
    st, _, j, _ = d.post("/v1/completions", {"prompt": prompt, "max_tokens": n,
                                             "temperature": 0})
    return st, j


def main(t):
    model = model_path()
    d = Daemon("--slots", "2")
    st, plain = answer(d)
    t.check("plain answer", st == 200, st)
    fam = d.metrics()
    t.check("engine steps counted", (value(fam, "edgeq_engine_steps_total") or 0) > 0)
    t.check("no draft metrics without --draft", value(fam, "edgeq_draft_tokens_total") is None)
    d.stop()

    for draft in ("lookup", "layers:1", model):
        d = Daemon("--slots", "2", "--draft", draft, "--draft-max", "3")
        st, j = answer(d)
        name = "model" if draft == model else draft
        t.check("--draft %s: greedy answer identical" % name,
                st == 200 and j["choices"][0]["text"] == plain["choices"][0]["text"],
                (st, j and j["choices"][0]["text"]))
        fam = d.metrics()
        for k in ("edgeq_draft_acceptance_ratio", "edgeq_tokens_per_pass",
                  "edgeq_draft_predicted_speedup"):
            t.check("--draft %s: %s in /metrics" % (name, k), value(fam, k) is not None)
        d.stop()

    # a draft model with another vocabulary
    other = os.path.join(TMP, "other-vocab.gguf")
    subprocess.run([os.path.join(TOP, O, "tools", "gguf-gen"), "-o", other, "--shape",
                    "micro"], check=True, stdout=subprocess.DEVNULL)
    # the load fails and the daemon exits non-zero (for systemd to see):
    # what /health says in between is a race with that exit, the log is not
    d = Daemon("--draft", other, wait=False)
    try:
        rc = d.proc.wait(30)
    except subprocess.TimeoutExpired:
        rc = None
    log = d.logtext()
    t.check("mismatched draft vocabulary fails the load and the daemon, saying so",
            rc not in (None, 0) and "vocabular" in log and "event=load-failed" in log,
            (rc, log[-300:]))
    d.stop()

    r = subprocess.run([EDGEQ, "serve", "-m", model, "--draft", "layers:x"],
                       capture_output=True, text=True, timeout=20)
    t.check("--draft layers:x is a usage error", r.returncode == 2 and "draft" in r.stderr,
            (r.returncode, r.stderr))
    r = subprocess.run([EDGEQ, "serve", "-m", model, "--kv-type", "q4"],
                       capture_output=True, text=True, timeout=20)
    t.check("--kv-type q4 is a usage error", r.returncode == 2, r.returncode)

    # while the weights load, the router counts prompt tokens with the
    # vocabulary (loaded first), the same count as once loaded
    d = Daemon("--load-delay", "3000", wait=False)
    for _ in range(100):
        if d.port:
            break
        time.sleep(0.05)
    long_prompt = "the quick brown fox jumps over the lazy dog " * 6
    # the vocabulary loads in moments, the weights after it, and then the
    # 3 s hold: ask until a refusal was counted with it (or the load is
    # over). By the clock, not a count of tries: a loaded CI machine may
    # take seconds to get the process as far as the vocabulary.
    deadline = time.time() + 30
    while time.time() < deadline:
        st, _, _, _ = d.post("/v1/completions", {"prompt": long_prompt, "max_tokens": 2})
        if st != 503 or any(c != "0" for c in re.findall(r"prompt_tokens=(\d+)", d.logtext())):
            break
        time.sleep(0.05)
    t.check("a request while loading is refused", st == 503, st)
    d.wait_ready()
    st, _, _, _ = d.post("/v1/completions", {"prompt": long_prompt, "max_tokens": 2,
                                             "temperature": 0})
    counts = [c for c in re.findall(r"prompt_tokens=(\d+)", d.logtext()) if c != "0"]
    t.check("prompt tokens counted alike while loading and loaded",
            st == 200 and len(counts) >= 2 and counts[0] == counts[-1]
            and int(counts[0]) != len(long_prompt) // 4, counts)
    d.stop()

    d = Daemon("--kv-type", "q8_0")
    st, j = answer(d)
    t.check("--kv-type q8_0 serves", st == 200 and j["usage"]["completion_tokens"] == 24, st)
    d.stop()

    # context shift: 64-token slots, an answer of 100 tokens
    d = Daemon("--ctx-size", "64", "--max-tokens", "200")
    st, j = answer(d, 100, "hi")
    t.check("without --context-shift the answer ends at the context",
            st == 200 and j["choices"][0]["finish_reason"] == "length"
            and j["usage"]["completion_tokens"] < 64, j and j["usage"])
    d.stop()
    d = Daemon("--ctx-size", "64", "--max-tokens", "200", "--context-shift")
    st, j = answer(d, 100, "hi")
    t.check("with --context-shift it runs past the context",
            st == 200 and j["usage"]["completion_tokens"] == 100, j and j["usage"])
    fam = d.metrics()
    t.check("the shifted slot still fits its cache",
            (value(fam, "edgeq_kv_cache_tokens") or 0) <= 2 * 64)
    e = (j or {}).get("edgeq", {})
    t.check("a prompt without a system message keeps BOS only",
            e.get("kept_tokens") == 1 and e.get("context_shifts", 0) >= 1, e)
    d.stop()
    # with a system prompt: the shift keeps it (its tokens, rendered alone)
    tmpl = os.path.join(TMP, "sys.jinja")
    with open(tmpl, "w") as f:
        f.write("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}[assistant] {% endif %}")
    d = Daemon("--ctx-size", "128", "--max-tokens", "200", "--context-shift",
               "--chat-template", tmpl)
    st, _, j, data = d.post("/v1/chat/completions", {
        "messages": [{"role": "system", "content": "Be terse."},
                     {"role": "user", "content": "hi"}],
        "max_tokens": 150, "temperature": 0})
    e = (j or {}).get("edgeq", {}) if st == 200 else {}
    t.check("a chat's system prompt is kept across the shift",
            st == 200 and e.get("kept_tokens", 0) > 4 and e.get("context_shifts", 0) >= 1
            and j["usage"]["completion_tokens"] == 150 and
            e["kept_tokens"] < j["usage"]["prompt_tokens"], (st, e, j and j.get("usage"), data[:300]))
    d.stop()


if __name__ == "__main__":
    run_tests(main)
