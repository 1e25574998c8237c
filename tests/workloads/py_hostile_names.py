"""py_hostile_names: names a profiler must not print raw: a function whose
name carries terminal escapes (retitle, clear screen, a carriage return and a
fake stack line), a file name with the same, a function name of 10 000
characters, and a thread outside threading whose kernel name (comm) is an
escape sequence. Each spins on the CPU for SECS (default 2); prints "ready"
once all run.
Usage: py_hostile_names.py [SECS]"""
import _thread
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\r    fake_frame (fake.py:1)\nafter\x9b31m"
LONG = "long_" + "x" * 9990 + "_end"
SOURCE = """
def spin(deadline):
    n = 0
    while __import__("time").monotonic() < deadline:
        n += 1
    return n
"""


def named(name, filename):
    """spin() compiled from a file named filename, renamed to name."""
    env = {}
    exec(compile(SOURCE, filename, "exec"), env)
    fn = env["spin"]
    code = fn.__code__
    changes = {"co_name": name}
    if sys.version_info >= (3, 11):
        changes["co_qualname"] = name
    fn.__code__ = code.replace(**changes)
    return fn


evil = named(EVIL, "/tmp/evil\x1b[31m\r\nfile.py")
long_fn = named(LONG, "long.py")
deadline = time.monotonic() + SECS
started = threading.Semaphore(0)


def comm_thread():
    """Not known to threading: readers name it by its kernel name."""
    try:
        with open("/proc/self/task/%d/comm" % threading.get_native_id(), "w") as f:
            f.write("\x1b]0;pwn\x07")
    except OSError:
        pass
    started.release()
    evil(deadline)


_thread.start_new_thread(comm_thread, ())
worker = threading.Thread(target=long_fn, args=(deadline,), name="\x1b[2Jthread")
worker.start()
started.acquire()
print("ready", flush=True)
evil(deadline)
worker.join()
