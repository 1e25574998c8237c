"""py_threads: a main thread waiting in join(), one thread sleeping in
sleeper() and one spinning on the CPU in spinner(), for SECS seconds
(default 3). Prints "ready" once both threads run."""
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0


def sleeper():
    time.sleep(SECS)


def spinner():
    end = time.time() + SECS
    while time.time() < end:
        pass


threads = [threading.Thread(target=sleeper, name="sleepy"),
           threading.Thread(target=spinner, name="spinny")]
for t in threads:
    t.start()
print("ready", flush=True)
for t in threads:
    t.join()
