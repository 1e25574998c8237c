"""py_odd_thread_names: thread names a reader from outside must not trust
blindly: 1000 characters, a tab, an int where threading keeps a str, and
characters outside the BMP. With "hide", threading._active is replaced by a
non-dict. Prints one JSON line {"threads": {native id: what a reader should
show, or null for "not this name"}} once all sleep (SECS, default 3)."""
import json
import sys
import threading
import time

SECS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0


def sleeper():
    time.sleep(SECS)


long_name = "x" * 1000
threads = [threading.Thread(target=sleeper, name=long_name),
           threading.Thread(target=sleeper, name="tab\there"),
           threading.Thread(target=sleeper, name="not-a-str"),
           threading.Thread(target=sleeper, name="emoji-\U0001F600-名前")]
for t in threads:
    t.start()
threads[2]._name = 12345
want = {threads[0].native_id: "x" * 127, threads[1].native_id: "tab?here",
        threads[2].native_id: None, threads[3].native_id: threads[3].name}
if len(sys.argv) > 1 and sys.argv[1] == "hide":
    threading._active = 5
    want = {tid: None for tid in want}
print(json.dumps({"threads": want}), flush=True)
for t in threads:
    t.join()
