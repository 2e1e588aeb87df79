#!/usr/bin/env python3
# edgeq serve with EDGEQ_TRUST_KEY: serves only a verified bundle from the
# store, rolls back over a refused current bundle at start, after a load
# failure, and after repeated starts without passing probation.
# timeout: 120
import os
import subprocess
import sys
import tempfile

TOP = os.environ.get("EDGEQ_TOP", ".")
sys.path.insert(0, os.path.join(TOP, "tests", "daemon"))
import edgeqd  # noqa: E402

EDGEQ = edgeqd.EDGEQ
GEN = os.path.join(TOP, os.environ.get("O", "build"), "tools", "gguf-gen")
MK = os.path.join(TOP, "tests", "ledger", "mkgguf.py")
T = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok - " + what)
    else:
        failed += 1
        print("FAIL - %s %s" % (what, detail))


def edgeq(*args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([EDGEQ] + list(args), capture_output=True, text=True, env=e)


def bundle(model, name, key="k", extra=()):
    man = os.path.join(T, name + ".json")
    r = edgeq("manifest", "create", "-m", model, "--module-abi", "0", "--name", name,
              "--probation", "600", "-o", man, *extra)
    assert r.returncode == 0, r.stderr
    r = edgeq("manifest", "sign", "-k", os.path.join(T, key), man)
    assert r.returncode == 0, r.stderr
    return man


def install(store, man, model):
    r = edgeq("manifest", "install", "-K", os.path.join(T, "k.pub"), "-m", model,
              "--store", store, man)
    assert r.returncode == 0, r.stderr
    return os.readlink(os.path.join(store, "current"))


def daemon(store, wait=True, args=(), env=None):
    e = {"EDGEQ_TRUST_KEY": os.path.join(T, "k.pub"), "EDGEQ_BUNDLES": store}
    e.update(env or {})
    return edgeqd.Daemon(*args, model=False, wait=wait, env=e)


if not os.access(GEN, os.X_OK):
    print("no %s: the decoder's model generator is not built" % GEN)
    sys.exit(77)
a, b = os.path.join(T, "a.gguf"), os.path.join(T, "b.gguf")
subprocess.run([GEN, "-o", a, "--shape", "tiny", "--type", "q8_0", "--seed", "1"], check=True,
               capture_output=True)
subprocess.run([GEN, "-o", b, "--shape", "tiny", "--type", "q8_0", "--seed", "2"], check=True,
               capture_output=True)
bad = os.path.join(T, "bad.gguf")
subprocess.run([sys.executable, MK, bad, "--drop", "blk.0.ffn_up.weight"], check=True)
edgeq("manifest", "keygen", "-k", os.path.join(T, "k"))
ma, mb, mbad = bundle(a, "a"), bundle(b, "b"), bundle(bad, "bad")

# 1. the verified current bundle is served, on probation
store = os.path.join(T, "s1")
ida = install(store, ma, a)
idb = install(store, mb, b)
d = daemon(store)
st, _, body = d.request("GET", "/v1/models")
d.stop()
log = d.logtext()
check("serves the verified current bundle", st == 200 and ("bundle %s/%s/model.gguf verified; on probation" % (store, idb)) in log, log[-400:])

# 2. the current bundle's model changed on disk: refused, rolled back at start
with open(os.path.join(store, idb, "model.gguf"), "r+b") as f:
    f.seek(-1, 2)
    f.write(b"X")
d = daemon(store)
d.stop()
check("a tampered current bundle is refused and the previous one served",
      os.readlink(os.path.join(store, "current")) == ida and
      ("%s/model.gguf verified" % ida) in d.logtext(), d.logtext()[-400:])
rl = open(os.path.join(store, "rollback.log")).read()
check("the refusal is recorded", "refused at start: model file hash differs" in rl, rl)

# 3. a bundle that does not load rolls back by itself
store = os.path.join(T, "s2")
ida = install(store, ma, a)
install(store, mbad, bad)
d = daemon(store, wait=False)
rc = d.proc.wait(timeout=30)
check("load failure: the daemon exits non-zero", rc != 0, rc)
check("load failure: rolled back to the previous bundle",
      os.readlink(os.path.join(store, "current")) == ida, d.logtext()[-400:])
check("load failure: reason recorded",
      "load failure" in open(os.path.join(store, "rollback.log")).read())
d = daemon(store)
st, _, _ = d.request("GET", "/health")
d.stop()
check("after the rollback the previous bundle serves", st == 200)

# 4. killed again and again during probation (OOM kills, crashes): rolled back
store = os.path.join(T, "s3")
ida = install(store, ma, a)
idb = install(store, mb, b)
for i in range(2):
    d = daemon(store)
    d.proc.kill()
    d.proc.wait()
check("two kills: still the new bundle", os.readlink(os.path.join(store, "current")) == idb)
d = daemon(store)
d.stop()
check("third start without passing probation rolls back",
      os.readlink(os.path.join(store, "current")) == ida, d.logtext()[-400:])
check("crash loop reason recorded",
      "started 3 times without passing" in open(os.path.join(store, "rollback.log")).read())

# 5. nothing verifies: refuse to serve
edgeq("manifest", "keygen", "-k", os.path.join(T, "other"))
store = os.path.join(T, "s4")
os.makedirs(store)
mo = bundle(a, "o", key="other")
r = edgeq("manifest", "install", "-K", os.path.join(T, "other.pub"), "-m", a, "--store", store, mo)
r = subprocess.run([EDGEQ, "serve", "--port", "0", "--config", "/dev/null"], capture_output=True,
                   text=True, env=dict(os.environ, EDGEQ_TRUST_KEY=os.path.join(T, "k.pub"),
                                       EDGEQ_BUNDLES=store), timeout=30)
check("no verified bundle: serve refuses (exit 3)", r.returncode == 3, (r.returncode, r.stderr))
check("and names why", "not by the trusted key" in r.stderr, r.stderr)

# 6. what the bundle signs is applied by serve
def refused(store):
    """serve on a bundle that must not start: (exit status, stderr)"""
    r = subprocess.run([EDGEQ, "serve", "--port", "0", "--config", "/dev/null",
                        "--log-target", "stderr"], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ,
                                            EDGEQ_TRUST_KEY=os.path.join(T, "k.pub"),
                                            EDGEQ_BUNDLES=store))
    return r.returncode, r.stderr


store = os.path.join(T, "s5")
ida = install(store, ma, a)
install(store, bundle(b, "huge", extra=("--memory-budget", "100000G")), b)
rc, err = refused(store)
check("a memory budget the box cannot give: refused, exit 3", rc == 3, err[-400:])
rl = open(os.path.join(store, "rollback.log")).read()
check("... rolled back, the reason recorded",
      os.readlink(os.path.join(store, "current")) == ida and
      "more than this box can give" in rl, rl[-300:])

store = os.path.join(T, "s6")
install(store, bundle(a, "leaky", extra=("--routing", '{"confidential":"any"}')), a)
rc, err = refused(store)
check("a routing policy that lets confidential out is refused",
      rc == 3 and "never leave the box" in err, err[-400:])

pub = edgeqd.FakeUpstream("public")
up = ["--public-url", pub.url, "--public-model", "m", "--local-tok-s", "5"]
body = {"prompt": "x", "max_tokens": 2, "edgeq_privacy": "public",
        "edgeq_slo_tokens_per_s": 1e6}
store = os.path.join(T, "s7")
install(store, bundle(a, "open"), a)
d = daemon(store, args=up)
st, h, _, _ = d.post("/v1/completions", body)
d.stop()
check("default routing (public: local-or-public): offloaded",
      st == 200 and h["x-edgeq-route"] == "public" and len(pub.received) == 1,
      (st, h))
store = os.path.join(T, "s8")
install(store, bundle(a, "closed", extra=(
    "--routing", '{"confidential":"local","internal":"local","public":"local"}')), a)
d = daemon(store, args=up)
st, h, _, _ = d.post("/v1/completions", body)
d.stop()
check("a bundle routing public to local only: stays local",
      st == 200 and h["x-edgeq-route"] == "local" and len(pub.received) == 1,
      (st, h))
check("... and says what it applies", "bundle applies:" in d.logtext(),
      d.logtext()[-400:])

# the thermal limits, against a fake thermal zone
sysroot = os.path.join(T, "sys")
z = os.path.join(sysroot, "class", "thermal", "thermal_zone0")
os.makedirs(z, exist_ok=True)
for k, v in (("type", "cpu-thermal"), ("temp", "97000")):
    with open(os.path.join(z, k), "w") as f:
        f.write(v + "\n")
store = os.path.join(T, "s9")
install(store, bundle(a, "hot", extra=("--throttle-c", "80", "--critical-c", "95")), a)
d = daemon(store, args=("--pressure", "psi"), env={"EDGEQ_SYSFS_ROOT": sysroot})
import time  # noqa: E402
deadline = time.time() + 10
st = 0
while time.time() < deadline:
    st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 1})
    if st == 503:
        break
    time.sleep(0.2)
check("at or above the bundle's critical temperature: 503, not admitted",
      st == 503 and "critical" in j["error"]["message"], (st, j))
with open(os.path.join(z, "temp"), "w") as f:
    f.write("60000\n")
deadline = time.time() + 10
while time.time() < deadline:
    st, h, j, _ = d.post("/v1/completions", {"prompt": "x", "max_tokens": 1})
    if st == 200:
        break
    time.sleep(0.2)
check("cooled below it: admitted again", st == 200, (st, j))
d.stop()
store = os.path.join(T, "s10")
install(store, bundle(a, "odd", extra=("--throttle-c", "90", "--critical-c", "80")), a)
rc, err = refused(store)
check("critical below throttle: refused as inconsistent",
      rc == 3 and "inconsistent" in err, err[-300:])

print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
