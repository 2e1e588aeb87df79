#!/usr/bin/env python3
# Sustained, not peak: the daemon reads the pressure monitor (PSI/sysfs
# fallback on a fake sysfs with a half-throttled CPU cooling device), exports
# the throttle, and the router offloads public requests whose SLO the
# throttled speed misses while the unthrottled one would meet it.
# timeout: 60
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, FakeUpstream, run_tests, value  # noqa: E402


def fake_sysfs(cur, mx):
    root = os.path.join(TMP, "sys")
    cd = os.path.join(root, "class", "thermal", "cooling_device0")
    os.makedirs(cd, exist_ok=True)
    for k, v in (("type", "Processor"), ("cur_state", str(cur)), ("max_state", str(mx))):
        with open(os.path.join(cd, k), "w") as f:
            f.write(v + "\n")
    return root


def main(t):
    pub = FakeUpstream("public")
    root = fake_sysfs(1, 2)
    d = Daemon("--pressure", "psi", "--public-url", pub.url, "--local-tok-s", "20",
               env={"EDGEQ_SYSFS_ROOT": root})
    fam = d.metrics()
    t.check("monitor source exported", value(fam, "edgeq_pressure_source", source="psi") == 1)
    t.check("CPU throttle from the cooling device exported",
            value(fam, "edgeq_throttle_ratio", device="cpu") == 0.5,
            fam.get("edgeq_throttle_ratio"))
    t.check("device thermal level exported",
            value(fam, "edgeq_device_thermal_level", device="cpu") == 0)
    t.check("memory pressure level exported",
            value(fam, "edgeq_memory_pressure_level") is not None)

    def ask(cls, slo):
        st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 4,
                                                 "edgeq_privacy": cls,
                                                 "edgeq_slo_tokens_per_s": slo})
        return st, h.get("x-edgeq-route")

    t.check("public, SLO 15 tok/s, peak 20 but sustained 10 -> public endpoint",
            ask("public", 15) == (200, "public"))
    t.check("public, SLO 8 tok/s (sustained 10 meets it) -> local",
            ask("public", 8) == (200, "local"))
    t.check("confidential, SLO 15 -> local anyway", ask("confidential", 15) == (200, "local"))
    t.check("log says the sustained speed", "sustained_tok_s=10.00" in d.logtext())
    d.stop()

    d = Daemon("--pressure", "off", "--public-url", pub.url, "--local-tok-s", "20")
    fam = d.metrics()
    t.check("--pressure off: no throttle metric (no source, no fake zero)",
            "edgeq_throttle_ratio" not in fam and "edgeq_pressure_source" not in fam)
    t.check("--pressure off: public SLO 15 stays local (peak 20)",
            ask("public", 15) == (200, "local"))
    d.stop()

    # the weight streamer: budget and cache hit rate, only where they exist
    d = Daemon("--pressure", "off", "--weights", "stream", "--weights-budget", "600K")
    st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 4})
    t.check("streaming weights: completion works", st == 200)
    fam = d.metrics()
    t.check("weights mode exported", value(fam, "edgeq_weights_mode", mode="stream") == 1)
    t.check("weights budget exported", value(fam, "edgeq_weights_budget_bytes") == 600 * 1024,
            value(fam, "edgeq_weights_budget_bytes"))
    hr = value(fam, "edgeq_weights_cache_hit_ratio")
    t.check("weights cache hit ratio in [0, 1)", hr is not None and 0 <= hr < 1, hr)
    t.check("weights read from storage counted",
            value(fam, "edgeq_weights_read_bytes_total") > 0)
    d.stop()
    d = Daemon("--pressure", "off", "--weights", "mmap")
    fam = d.metrics()
    t.check("mmap: mode exported, no budget (the page cache decides)",
            value(fam, "edgeq_weights_mode", mode="mmap") == 1 and
            "edgeq_weights_budget_bytes" not in fam)
    d.stop()
    pub.close()


run_tests(main)
