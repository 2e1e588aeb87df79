#!/usr/bin/env python3
# Energy in /metrics: on a fake Jetson INA3221 (VDD_IN 5 V x 1.2 A = 6 W)
# the daemon exports the board power, the energy since start and, once it
# generated, joules per token; on a box with no readable rail it says so
# (edgeq_power_rails 0 with the reason) and exports no energy figure.
# timeout: 90
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, run_tests, value  # noqa: E402


def put(path, v):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(str(v) + "\n")


def main(t):
    root = os.path.join(TMP, "orin", "sys")
    hw = os.path.join(root, "class", "hwmon", "hwmon1")
    for k, v in (("name", "ina3221"), ("in1_label", "VDD_IN"), ("in1_input", 5000),
                 ("curr1_input", 1200), ("in2_label", "VDD_CPU_GPU_CV"),
                 ("in2_input", 5000), ("curr2_input", 400)):
        put(os.path.join(hw, k), v)
    d = Daemon("--pressure", "off", env={"EDGEQ_SYSFS_ROOT": root})
    time.sleep(0.5)
    fam = d.metrics()
    t.check("two rails read", value(fam, "edgeq_power_rails") == 2, fam.get("edgeq_power_rails"))
    t.check("board power is VDD_IN: 6 W", value(fam, "edgeq_power_watts") == 6.0)
    t.check("each rail exported",
            value(fam, "edgeq_rail_power_watts", rail="VDD_CPU_GPU_CV", source="hwmon") == 2.0)
    e0 = value(fam, "edgeq_energy_joules_total")
    t.check("energy since start counts up", e0 is not None and e0 > 0, e0)
    t.check("average power 6 W", abs(value(fam, "edgeq_power_average_watts") - 6.0) < 0.05)
    t.check("no J/token before any token", "edgeq_energy_per_token_joules" not in fam)
    st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 8,
                                             "temperature": 0})
    t.check("a completion", st == 200)
    fam = d.metrics()
    gen = value(fam, "edgeq_generation_tokens_total")
    e1 = value(fam, "edgeq_energy_joules_total")
    jt = value(fam, "edgeq_energy_per_token_joules")
    t.check("J/token = energy since start / tokens generated",
            jt is not None and gen and abs(jt - e1 / gen) / jt < 0.1, (jt, e1, gen))
    d.stop()

    empty = os.path.join(TMP, "vm", "sys")
    os.makedirs(os.path.join(empty, "class"), exist_ok=True)
    d = Daemon("--pressure", "off", env={"EDGEQ_SYSFS_ROOT": empty})
    fam = d.metrics()
    why = "no readable power rail: no hwmon power or voltage and current channel, no powercap zone"
    t.check("no rail: edgeq_power_rails 0 with the reason",
            value(fam, "edgeq_power_rails", reason=why) == 0, fam.get("edgeq_power_rails"))
    t.check("no rail: no energy figure (no fake zero)",
            not any(k in fam for k in ("edgeq_power_watts", "edgeq_energy_joules_total",
                                       "edgeq_energy_per_token_joules")))
    d.stop()


run_tests(main)
