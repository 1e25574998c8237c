"""A log shipper: the main thread reads log records as they come (one about
every 10 ms, standing in for a tailed file) and a shipper thread takes them
from a queue.SimpleQueue, sending a batch of 20 to the collector (a short
call) when it has one. The shipper waits on the empty queue most of the time:
an idle consumer, not a lock another thread holds.

usage: py_log_shipper.py [SECONDS] (default 3)
"""
import queue
import sys
import threading
import time


class Shipper(threading.Thread):
    def __init__(self, q, batch=20):
        super().__init__(name="shipper")
        self.q = q
        self.batch = batch
        self.sent = 0

    def send(self, records):
        time.sleep(0.002)  # the collector's round trip
        self.sent += len(records)

    def run(self):
        pending = []
        while True:
            rec = self.q.get()
            if rec is None:
                break
            pending.append(rec)
            if len(pending) >= self.batch:
                self.send(pending)
                pending = []
        if pending:
            self.send(pending)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    q = queue.SimpleQueue()
    shipper = Shipper(q)
    shipper.start()
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        time.sleep(0.01)  # the next record arrives
        q.put({"seq": n, "msg": "GET /api/items/%d 200" % n})
        n += 1
    q.put(None)
    shipper.join()
    print("shipped", shipper.sent)


if __name__ == "__main__":
    main()
