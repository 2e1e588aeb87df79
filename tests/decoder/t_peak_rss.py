#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# edgeq run's "peak RSS" is the process's real peak (what the kernel's
# getrusage reports for it), the roofline measurement's buffer included,
# not the peak at the end of generation.
# timeout: 120
import json
import os
import resource
import subprocess
import sys
import tempfile

TOP = os.environ.get("EDGEQ_TOP", ".")
O = os.environ.get("O", "build")
EDGEQ = os.environ.get("EDGEQ", os.path.join(TOP, O, "edgeq"))
GEN = os.path.join(TOP, O, "tools", "gguf-gen")
if not os.access(GEN, os.X_OK):
    print("gguf-gen is not built")
    sys.exit(77)
tmp = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))
model = os.path.join(tmp, "tiny.gguf")
subprocess.run([GEN, "-o", model, "--shape", "tiny", "--type", "q8_0"],
               check=True, stdout=subprocess.DEVNULL)
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    print(("ok - " if ok else "FAIL - ") + what + ("" if ok else " " + str(detail)))
    if ok:
        passed += 1
    else:
        failed += 1


for args, what in ((["--json"], "with the roofline"),
                   (["--json", "--no-roofline"], "without it")):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    r = subprocess.run([EDGEQ, "run", "-m", model, "-p", "Once", "-n", "8",
                        "--temp", "0", "-t", "1"] + args,
                       capture_output=True, text=True, timeout=60)
    kernel_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        rep = json.loads(r.stdout)["timings"]["peak_rss"]
    except (ValueError, KeyError) as e:
        check("run %s gives its timings" % what, False, (e, r.stderr[-300:]))
        continue
    # RUSAGE_CHILDREN is the largest child so far: only meaningful when
    # this child set it (the first run, the larger one)
    if kernel_kib > before:
        check("peak RSS %s is the process's real peak (%.0f vs %.0f MiB)" %
              (what, rep / 2**20, kernel_kib / 1024),
              rep >= kernel_kib * 1024 * 0.9, (rep, kernel_kib))
    else:
        check("peak RSS %s is reported" % what, rep > 0, rep)
print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
