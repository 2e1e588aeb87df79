#!/usr/bin/env python3
# timeout: 60
"""edgeq top in a pseudo-terminal: ANSI frames, redraw fitted to a new
width on SIGWINCH, q quits with exit 0 and the terminal restored."""
import fcntl, os, pty, select, signal, struct, subprocess, sys, tempfile, termios, time

here = os.path.dirname(os.path.abspath(__file__))
edgeq = os.environ.get("EDGEQ", "build/edgeq")
passed = failed = 0


def check(what, ok):
    global passed, failed
    print(("ok - " if ok else "FAIL - ") + what)
    if ok:
        passed += 1
    else:
        failed += 1


def read_for(fd, secs):
    out = b""
    end = time.time() + secs
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                b = os.read(fd, 65536)
            except OSError:
                break
            if not b:
                break
            out += b
    return out


tmp = tempfile.mkdtemp()
subprocess.run(["bash", "-c", '. "$1/fake.sh"; mkfake "$2"', "-", here, tmp], check=True)
env = dict(os.environ, EDGEQ_NO_BPF="1", EDGEQ_SYSFS_ROOT=tmp + "/sys",
           EDGEQ_PROC_ROOT=tmp + "/proc", TERM="xterm")
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
p = subprocess.Popen([edgeq, "top"], stdin=slave, stdout=slave, stderr=slave,
                     env=env, start_new_session=True)
os.close(slave)
out = read_for(master, 1.5)
check("first frame drawn", b"edgeq top" in out and b"cpu-thermal" in out)
check("plain ANSI: cursor home and clear-to-end", b"\x1b[H" in out and b"\x1b[K" in out)
# shrink to 50 columns and signal
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 50, 0, 0))
os.killpg(p.pid, signal.SIGWINCH)
time.sleep(0.2)
# another change forces a redraw on the event path (refresh timer)
out = read_for(master, 1.5)
frame = out.split(b"\x1b[H")[-1]
lines = [l.replace(b"\x1b[K", b"").replace(b"\x1b[J", b"") for l in frame.split(b"\r\n")]
longest = max(len(l) for l in lines) if lines else 0
check("after SIGWINCH lines fit 50 columns (longest %d)" % longest, 0 < longest <= 50)
os.write(master, b"q")
try:
    rc = p.wait(timeout=3)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
check("q quits with exit 0 (rc %r)" % rc, rc == 0)
rest = read_for(master, 0.3)
check("cursor shown again on exit", b"\x1b[?25h" in out + rest)
subprocess.run(["rm", "-rf", tmp])
print("%d passed, %d failed, 0 skipped" % (passed, failed))
sys.exit(1 if failed else 0)
