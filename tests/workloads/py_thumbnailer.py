"""py_thumbnailer: an image-thumbnail service in miniature: requests arrive
one at a time from an intake loop (about every 40 ms), a hand-rolled pool of
worker threads takes them from a queue.Queue, "decodes" and "resizes" each
(about 8 ms of pure-Python work), and the results are collected.

usage: py_thumbnailer.py [--workers N (default 32)] [--seconds S (default 4)]
                         [--every-ms MS (default 40)] [--fetch-ms MS (default 0)]

With the default 32 workers, at most one or two ever work at once: the pool is
far larger than its work. `--workers 2` is the same service sized to it;
`--workers 16 --every-ms 5 --fetch-ms 60` keeps a pool of 16 busy (each
request first waits 60 ms to fetch the original).
"""
import argparse
import hashlib
import logging
import queue
import threading
import time

log = logging.getLogger("thumbnailer")


class Request:
    def __init__(self, request_id, width, height):
        self.request_id = request_id
        self.width = width
        self.height = height


class Thumbnailer:
    def __init__(self, workers, fetch_s):
        self._fetch_s = fetch_s
        self._jobs = queue.Queue()
        self._results = queue.Queue()
        self._threads = [threading.Thread(target=self._work, name="thumb-worker-%d" % i,
                                          daemon=True)
                         for i in range(workers)]

    def start(self):
        for t in self._threads:
            t.start()

    def submit(self, request):
        self._jobs.put(request)

    def stop(self):
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()

    def results(self):
        out = []
        while not self._results.empty():
            out.append(self._results.get())
        return out

    def _work(self):
        while True:
            request = self._jobs.get()
            if request is None:
                return
            if self._fetch_s:
                time.sleep(self._fetch_s)  # the original, from object storage
            self._results.put((request.request_id, self._render(request)))

    def _render(self, request):
        pixels = bytes(range(256)) * (request.width * request.height * 3 // 256)
        digest = hashlib.sha1()
        for row in range(0, len(pixels), 64):
            chunk = pixels[row:row + 64]
            digest.update(bytes(b // 2 for b in chunk[::4]))
        return digest.hexdigest()[:12]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--every-ms", type=float, default=40.0)
    ap.add_argument("--fetch-ms", type=float, default=0.0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    service = Thumbnailer(args.workers, args.fetch_ms / 1000)
    service.start()
    end = time.monotonic() + args.seconds
    n = 0
    while time.monotonic() < end:
        service.submit(Request(n, 320, 240))
        n += 1
        time.sleep(args.every_ms / 1000)
    service.stop()
    log.info("rendered %d thumbnails with %d workers", len(service.results()), args.workers)


if __name__ == "__main__":
    main()
