#!/usr/bin/env python3
# The systemd protocol without systemd: a NOTIFY_SOCKET of our own receives
# STATUS/READY=1 after loading, WATCHDOG=1 pings from the event loop, no pings
# while a generation is stuck, STOPPING=1 on SIGTERM.
# timeout: 60
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeqd import TMP, Daemon, run_tests, value  # noqa: E402


class Notify:
    def __init__(self):
        self.path = os.path.join(TMP, "notify.sock")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.s.bind(self.path)
        self.msgs = []  # (time, text)
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                d = self.s.recv(4096)
            except OSError:
                return
            self.msgs.append((time.time(), d.decode()))

    def lines(self, key, since=0):
        return [t for t, m in self.msgs if t >= since for l in m.split("\n") if l.startswith(key)]


def main(t):
    n = Notify()
    d = Daemon("--load-delay", "500", "--token-delay", "1500",
               env={"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": "300000"})
    t.check("STATUS while loading", n.lines("STATUS=loading"))
    deadline = time.time() + 5  # /health may say 200 a moment before READY=1
    while not n.lines("READY=1") and time.time() < deadline:
        time.sleep(0.02)
    t.check("READY=1 once loaded", n.lines("READY=1"))
    if not n.lines("READY=1"):
        return
    ready = n.lines("READY=1")[0]
    loading = n.lines("STATUS=loading")[0]
    t.check("READY=1 comes after the load delay", ready - loading >= 0.45, ready - loading)
    t1 = time.time()
    time.sleep(1.0)
    t.check("watchdog pings every ~150 ms while idle", len(n.lines("WATCHDOG=1", since=t1)) >= 3,
            len(n.lines("WATCHDOG=1", since=t1)))

    # a generation stuck for 1.5 s per token: pings stop after 0.3 s of no progress
    th = threading.Thread(target=lambda: d.post("/v1/completions",
                                                {"prompt": "x", "max_tokens": 2}))
    th.start()
    deadline = time.time() + 10
    while value(d.metrics(), "edgeq_requests_running") < 1 and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # 0.3 s without progress, plus a poll period
    t0 = time.time()
    time.sleep(0.5)
    t.check("no watchdog ping while a generation makes no progress",
            not n.lines("WATCHDOG=1", since=t0), len(n.lines("WATCHDOG=1", since=t0)))
    th.join()
    time.sleep(0.5)
    t.check("pings resume once it moves", n.lines("WATCHDOG=1", since=time.time() - 0.4))
    d.stop()
    t.check("STOPPING=1 on SIGTERM", n.lines("STOPPING=1"))


run_tests(main)
