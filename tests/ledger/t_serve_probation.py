#!/usr/bin/env python3
# edgeq serve feeds a bundle's probation (Documentation/manifest.rst):
# decode throughput of each generation against the manifest's floor, and
# device agents lost (queues run in-process by the EDGEQ_TEST_INLINE_AGENT
# hook). A failed probation rolls back to the previous bundle, records why,
# and stops the daemon non-zero so its restart serves the previous bundle.
# timeout: 120
import os
import subprocess
import sys
import tempfile
import time

TOP = os.environ.get("EDGEQ_TOP", ".")
sys.path.insert(0, os.path.join(TOP, "tests", "daemon"))
import edgeqd  # noqa: E402

EDGEQ = edgeqd.EDGEQ
GEN = os.path.join(TOP, os.environ.get("O", "build"), "tools", "gguf-gen")
T = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))
passed = failed = 0
FAST = "[device.npu]\nops = matmul\ndtypes = all\ngflops = 1e5\nmem_gbs = 40\n" \
       "launch_us = 0\nop_us = 0\nsync_us = 0\n"


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + what)
    else:
        failed += 1
        print("FAIL - %s %s" % (what, detail))
    sys.stdout.flush()


def edgeq(*args):
    return subprocess.run([EDGEQ] + list(args), capture_output=True, text=True)


def bundle(model, name, *extra):
    man = os.path.join(T, name + ".json")
    r = edgeq("manifest", "create", "-m", model, "--module-abi", "0", "--name", name,
              "--probation", "600", *extra, "-o", man)
    assert r.returncode == 0, r.stderr
    r = edgeq("manifest", "sign", "-k", os.path.join(T, "k"), man)
    assert r.returncode == 0, r.stderr
    return man


def install(store, man, model):
    r = edgeq("manifest", "install", "-K", os.path.join(T, "k.pub"), "-m", model,
              "--store", store, man)
    assert r.returncode == 0, r.stderr
    return os.readlink(os.path.join(store, "current"))


def daemon(store, *args, env=None):
    e = {"EDGEQ_TRUST_KEY": os.path.join(T, "k.pub"), "EDGEQ_BUNDLES": store}
    e.update(env or {})
    return edgeqd.Daemon("--no-prefix-cache", *args, model=False, env=e)


def gen(d, n=8):
    st, _, j, raw = d.post("/v1/completions", {"prompt": "Once upon a time", "max_tokens": n,
                                               "temperature": 0})
    return st


def rollback_log(store):
    p = os.path.join(store, "rollback.log")
    return open(p).read() if os.path.exists(p) else ""


if not os.access(GEN, os.X_OK):
    print("no %s: the decoder's model generator is not built" % GEN)
    sys.exit(77)
a, b = os.path.join(T, "a.gguf"), os.path.join(T, "b.gguf")
for m, seed in ((a, "1"), (b, "2")):
    subprocess.run([GEN, "-o", m, "--shape", "tiny", "--type", "q8_0", "--seed", seed],
                   check=True, capture_output=True)
edgeq("manifest", "keygen", "-k", os.path.join(T, "k"))
ma = bundle(a, "a")
# a floor no tiny model reaches on this box, for 1 s
mslow = bundle(b, "slow", "--min-tps", "1e9", "--floor-window", "1")
# a floor it reaches easily
mok = bundle(b, "ok", "--min-tps", "0.001", "--floor-window", "1")
# one lost device agent fails probation
mcrash = bundle(b, "crash", "--max-crashes", "1")

# 1. decode throughput under the floor for the window: rolled back
store = os.path.join(T, "s1")
ida = install(store, ma, a)
idb = install(store, mslow, b)
d = daemon(store)
check("first generation under the floor: still served", gen(d) == 200)
check("not rolled back before the window", os.readlink(os.path.join(store, "current")) == idb)
time.sleep(1.2)
gen(d)
try:
    rc = d.proc.wait(timeout=20)
except subprocess.TimeoutExpired:
    rc = None
d.stop()
log = d.logtext()
check("under the floor past the window: rolled back to the previous bundle",
      os.readlink(os.path.join(store, "current")) == ida, log[-500:])
check("the daemon stops non-zero (its restart serves the previous bundle)",
      rc not in (None, 0), rc)
rl = rollback_log(store)
check("reason recorded: throughput under the floor",
      "under the floor of 1000000000.00" in rl and idb in rl, rl)
check("reason logged", "rolled back to the previous bundle" in log, log[-500:])
d = daemon(store)
st = gen(d)
d.stop()
check("restarted: the previous bundle serves",
      st == 200 and ("%s/model.gguf verified" % ida) in d.logtext(), d.logtext()[-300:])

# 2. a floor the model meets: no rollback
store = os.path.join(T, "s2")
install(store, ma, a)
idb = install(store, mok, b)
d = daemon(store)
gen(d)
time.sleep(1.2)
gen(d)
alive = d.proc.poll() is None
d.stop()
check("throughput above the floor: kept, still serving",
      alive and os.readlink(os.path.join(store, "current")) == idb and not rollback_log(store),
      d.logtext()[-300:])

# 3. a device agent lost while on probation: rolled back
prof = os.path.join(T, "fast.ini")
with open(prof, "w") as f:
    f.write(FAST)
store = os.path.join(T, "s3")
ida = install(store, ma, a)
idb = install(store, mcrash, b)
d = daemon(store, "--device-queue", "npu0",
           env={"EDGEQ_DEVICES": prof, "EDGEQ_TEST_INLINE_AGENT": "5"})
st = gen(d)
try:
    rc = d.proc.wait(timeout=20)
except subprocess.TimeoutExpired:
    rc = None
d.stop()
log = d.logtext()
check("agent lost: the request still succeeds", st == 200)
check("agent lost: rolled back", os.readlink(os.path.join(store, "current")) == ida, log[-500:])
check("agent lost: daemon stops non-zero", rc not in (None, 0), rc)
check("agent lost: reason recorded", "device agents crashed 1 times" in rollback_log(store),
      rollback_log(store))

# 4. the same agent that never dies: kept
store = os.path.join(T, "s4")
install(store, ma, a)
idb = install(store, mcrash, b)
d = daemon(store, "--device-queue", "npu0",
           env={"EDGEQ_DEVICES": prof, "EDGEQ_TEST_INLINE_AGENT": "0"})
gen(d)
alive = d.proc.poll() is None
d.stop()
check("healthy agent: kept", alive and os.readlink(os.path.join(store, "current")) == idb)

print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
