"""py_named_threads: threads named through threading: "loader" and
"worker-2" at creation, "työ-3" (not ASCII), one left to its default name
("Thread-N", "Thread-N (sleeper)" on 3.10+) and one renamed half a second
after it started ("renamed-late"). The loader's __dict__ is asked for, which
gives it a dict of its own where 3.11+ keep attributes without one. Every thread sleeps in sleeper() for SECS
seconds (default 2.5) and the main thread joins them. Once the late one is
renamed it prints one JSON line: {"threads": {native thread id: name}}, the
main thread included."""
import json
import sys
import threading
import time

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.5


def sleeper():
    time.sleep(SECS)


threads = [threading.Thread(target=sleeper, name="loader"),
           threading.Thread(target=sleeper, name="worker-2"),
           threading.Thread(target=sleeper, name="työ-3"),
           threading.Thread(target=sleeper),
           threading.Thread(target=sleeper, name="early-name")]
for t in threads:
    t.start()
vars(threads[0])
time.sleep(0.5)
threads[-1].name = "renamed-late"
names = {threading.get_native_id(): threading.current_thread().name}
names.update({t.native_id: t.name for t in threads})
print(json.dumps({"threads": names}), flush=True)
for t in threads:
    t.join()
