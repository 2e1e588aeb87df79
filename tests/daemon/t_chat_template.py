#!/usr/bin/env python3
# edgeq serve with a Jinja chat template (--chat-template FILE): tools and
# role tool messages reach the template, raise_exception is a 400 naming the
# template's message, fields the engine does not act on (tool_choice,
# response_format, logit_bias) are accepted with an X-Edgeq-Warning header,
# an unreadable template fails the load, and a model without a template
# falls back to a built-in format, said in the log.
# timeout: 120
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, run_tests  # noqa: E402

TEMPLATE = r"""{%- if tools %}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'wizard' %}{{ raise_exception('wizards are not welcome here') }}{% endif %}
<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}{% endif %}
{{- m.content if m.content is string else '' }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

# small: the synthetic model's context is 256 tokens of about a byte each
TOOLS = [{"type": "function", "function": {"name": "w"}}]


def main(t):
    path = os.path.join(TMP, "chat-template.%d.jinja" % os.getpid())
    with open(path, "w") as f:
        f.write(TEMPLATE)
    d = Daemon("--chat-template", path)
    t.check("the log names the Jinja template", "(Jinja)" in d.logtext(), d.logtext()[-300:])
    msgs = [{"role": "user", "content": "weather in Paris?"}]
    st, h, j, _ = d.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 1})
    t.check("plain chat 200", st == 200, (st, j))
    base = j["usage"]["prompt_tokens"] if st == 200 else 0
    t.check("no warning header without such fields", "x-edgeq-warning" not in h, h)

    full = msgs + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    st, h, j, data = d.post("/v1/chat/completions", {
        "messages": full, "tools": TOOLS, "tool_choice": "required",
        "response_format": {"type": "json_object"}, "logit_bias": {"5": -100},
        "parallel_tool_calls": False, "max_tokens": 1})
    t.check("tools, tool_choice, response_format, logit_bias and role tool: 200",
            st == 200, (st, data[:300]))
    t.check("the tools reached the template (a longer prompt)",
            st == 200 and j["usage"]["prompt_tokens"] > base + 40,
            (base, j and j.get("usage")))
    msg = j["choices"][0]["message"] if st == 200 else {}
    t.check("an answer that is no tool call stays content (toolcall.c parses calls)",
            isinstance(msg.get("content"), str) and "tool_calls" not in msg and
            j["choices"][0]["finish_reason"] in ("stop", "length"), msg)
    w = h.get("x-edgeq-warning", "")
    t.check("X-Edgeq-Warning names what is not enforced",
            all(x in w for x in ("tool_choice", "response_format", "logit_bias", "tools")), w)
    # streamed with tools: the same text, with no call in it, as content
    body = {"messages": msgs, "tools": TOOLS, "max_tokens": 12, "temperature": 0}
    st, _, jn, _ = d.post("/v1/chat/completions", body)
    st2, _, ev, _ = d.stream("/v1/chat/completions", dict(body, stream=True))
    chunks = [e for e in ev if e != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    t.check("streamed with tools: the text as content, equal to the whole answer",
            st == 200 and st2 == 200 and text == jn["choices"][0]["message"]["content"] and
            not any("tool_calls" in c["choices"][0]["delta"] for c in chunks if c["choices"]) and
            chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length") and ev[-1] == "[DONE]",
            (text, jn and jn["choices"][0], chunks[-1:]))
    st, h, j, _ = d.post("/v1/chat/completions", {
        "messages": msgs, "tool_choice": "auto", "response_format": {"type": "text"},
        "max_tokens": 1})
    t.check("tool_choice auto and text response_format need no warning",
            st == 200 and "x-edgeq-warning" not in h, h)

    st, _, j, _ = d.post("/v1/chat/completions", {
        "messages": [{"role": "wizard", "content": "x"}], "max_tokens": 1})
    t.check("raise_exception is a 400 with the template's message",
            st == 400 and "wizards are not welcome here" in j["error"]["message"] and
            j["error"]["param"] == "messages", (st, j))
    st, _, j, _ = d.post("/v1/chat/completions", {"messages": [{"content": "x"}], "max_tokens": 1})
    t.check("a message without a role is a 400", st == 400 and j["error"]["param"] == "messages",
            (st, j))
    st, _, j, _ = d.post("/v1/chat/completions", {"messages": msgs, "tools": {"a": 1}})
    t.check("tools not an array is a 400", st == 400 and j["error"]["param"] == "tools", (st, j))
    d.stop()

    # the daemon exits when the load fails: its exit and log say why (a
    # /health poll would race with that exit)
    bad = Daemon("--chat-template", os.path.join(TMP, "no-such-template.jinja"), wait=False)
    try:
        rc = bad.proc.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
    t.check("an unreadable --chat-template fails the load, naming it",
            rc not in (None, 0) and "no-such-template" in bad.logtext(),
            (rc, bad.logtext()[-300:]))
    bad.stop()

    with open(path, "w") as f:
        f.write("{% for m in messages %}{{ m.role }")
    bad = Daemon("--chat-template", path, wait=False)
    deadline = time.time() + 20
    while time.time() < deadline and bad.proc.poll() is None and \
            "TemplateSyntaxError" not in bad.logtext():
        time.sleep(0.1)
    t.check("a template with a syntax error fails the load with Jinja's error",
            "TemplateSyntaxError" in bad.logtext(), bad.logtext()[-300:])
    bad.stop()
    os.unlink(path)

    fb = Daemon()
    t.check("a model without a template: the built-in fallback is logged",
            "fallback" in fb.logtext() and "no tokenizer.chat_template" in fb.logtext(),
            fb.logtext()[-300:])
    st, h, j, _ = fb.post("/v1/chat/completions", {"messages": msgs, "tools": TOOLS,
                                                    "max_tokens": 1})
    t.check("fallback: tools accepted, said to be ignored",
            st == 200 and "tools ignored" in h.get("x-edgeq-warning", ""), (st, h))
    fb.stop()


run_tests(main)
