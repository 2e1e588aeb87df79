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


def bundle(model, name, key="k"):
    man = os.path.join(T, name + ".json")
    r = edgeq("manifest", "create", "-m", model, "--module-abi", "0", "--name", name,
              "--probation", "600", "-o", man)
    assert r.returncode == 0, r.stderr
    r = edgeq("manifest", "sign", "-k", os.path.join(T, key), man)
    assert r.returncode == 0, r.stderr
    return man


def install(store, man, model):
    r = edgeq("manifest", "install", "-K", os.path.join(T, "k.pub"), "-m", model,
              "--store", store, man)
    assert r.returncode == 0, r.stderr
    return os.readlink(os.path.join(store, "current"))


def daemon(store, wait=True):
    return edgeqd.Daemon(model=False, wait=wait,
                         env={"EDGEQ_TRUST_KEY": os.path.join(T, "k.pub"),
                              "EDGEQ_BUNDLES": store})


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

print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
