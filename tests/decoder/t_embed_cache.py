#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The token embedding is read a row per token, anywhere in it: with the
# file mapped (--weights mmap), the whole of it is asked for at load
# (MADV_WILLNEED), so a cold page cache costs one background read, not a
# read from flash per new token. Checked with mincore(2) on the file after
# a one-token run that found it evicted: a decode pass reads every matrix
# whole anyway, so the embedding is the one part only the advice brings in
# (a row's fault brings its readahead window, 128 KiB of 37 MiB).
# timeout: 180
import ctypes
import mmap
import os
import struct
import subprocess
import sys
import tempfile
import time

TOP = os.environ.get("EDGEQ_TOP", ".")
O = os.environ.get("O", "build")
EDGEQ = os.environ.get("EDGEQ", os.path.join(TOP, O, "edgeq"))
GEN = os.path.join(TOP, O, "tools", "gguf-gen")
if not os.access(GEN, os.X_OK):
    print("gguf-gen is not built")
    sys.exit(77)
tmp = tempfile.mkdtemp(dir=os.environ.get("EDGEQ_TEST_TMP", "/tmp"))
model = os.path.join(tmp, "emb.gguf")
subprocess.run([GEN, "-o", model, "--shape", "1b", "--layers", "1",
                "--type", "q4_0"], check=True, stdout=subprocess.DEVNULL)


def embedding_extent(path):
    """token_embd.weight's file offset and size (a Q4_0 matrix) from the
    GGUF header."""
    f = open(path, "rb")

    def take(fmt):
        return struct.unpack("<" + fmt, f.read(struct.calcsize(fmt)))[0]

    def string():
        return f.read(take("Q")).decode()

    sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f",
             7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(sizes[t])

    assert f.read(4) == b"GGUF"
    take("I")
    n_t, n_kv = take("Q"), take("Q")
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("I"))
    found = None
    for _ in range(n_t):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        take("I")
        off = take("Q")
        if name == "token_embd.weight":
            found = (off, ne[0] // 32 * 18 * ne[1])
    align = meta.get("general.alignment", 32)
    data = (f.tell() + align - 1) // align * align
    f.close()
    return data + found[0], found[1]


emb_off, emb_size = embedding_extent(model)
passed = failed = 0

libc = ctypes.CDLL(None, use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def check(what, ok, detail=""):
    global passed, failed
    print(("ok - " if ok else "FAIL - ") + what + ("" if ok else " " + str(detail)))
    if ok:
        passed += 1
    else:
        failed += 1


libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def resident(off, size):
    """Share of the file's pages in [off, off + size) in the page cache
    (mincore on a mapping of our own: the page cache is the file's)."""
    pg = mmap.PAGESIZE
    a = off // pg * pg
    length = off + size - a
    fd = os.open(model, os.O_RDONLY)
    try:
        p = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, a)
        if p is None or p == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "mmap")
        vec = ctypes.create_string_buffer((length + pg - 1) // pg)
        rc = libc.mincore(p, length, vec)
        libc.munmap(p, length)
        if rc:
            raise OSError(ctypes.get_errno(), "mincore")
    finally:
        os.close(fd)
    return sum(b & 1 for b in vec.raw) / len(vec.raw)


def evict():
    fd = os.open(model, os.O_RDONLY)
    os.fsync(fd)  # a page still dirty from gguf-gen cannot be dropped
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


evict()
cold = resident(emb_off, emb_size)
if cold > 0.5:
    print("skip: the file system keeps the file's pages (%.0f %% of the "
          "embedding still cached after POSIX_FADV_DONTNEED)" % (cold * 100))
    sys.exit(77)
r = subprocess.run([EDGEQ, "run", "-m", model, "--weights", "mmap", "-p",
                    "Once", "-n", "1", "--temp", "0", "-t", "1"],
                   capture_output=True, text=True, timeout=120)
check("a one-token run with the file mapped succeeds", r.returncode == 0,
      r.stderr[-300:])
share = resident(emb_off, emb_size)
for _ in range(50):  # the advice's reads finish in the background
    if share >= 0.95:
        break
    time.sleep(0.1)
    share = resident(emb_off, emb_size)
check("the token embedding is in the page cache after the run "
      "(%.1f %%, %.1f %% before)" % (share * 100, cold * 100), share >= 0.95)
print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
