"""py_pipeline: a small batch job written the way such jobs are written: a
logging set-up, a settings object, one class per stage, and a client with a
connection pool. It logs where each stage starts and ends with the duration it
measured itself, so a profiler's phase table can be checked against the
program's own numbers.

usage: py_pipeline.py [--style kv|words|banner|custom] [--log FILE]
                      [--rotate BYTES] [--noise]

  --style   how stages are announced: kv "phase=fetch start" / "phase=fetch
            done in 1.02s" (default), words "Starting fetch" / "Finished fetch
            in 1.02s", banner "=== fetch ===", custom "step fetch: begin" /
            "step fetch: end (1.02s)"
  --log     log to FILE instead of stderr
  --rotate  with --log: rotate FILE after BYTES (RotatingFileHandler)
  --truncate  with --log: empty FILE after the fetch stage (as logrotate's
            copytruncate does), half a second after its last line
  --noise   before working, write a 2 MiB line without a newline for a while
            and a burst of binary bytes to stdout
  --linger  seconds the last stage (notify) waits for an acknowledgement
"""
import argparse
import hashlib
import logging
import logging.handlers
import os
import queue
import sys
import tempfile
import threading
import time

log = logging.getLogger("pipeline")


class Settings:
    def __init__(self, style):
        self.style = style
        self.sources = 24
        self.pool_size = 4
        self.records = 300_000


class Stage:
    """Announces itself in the configured style around run()."""

    name = "stage"

    def __init__(self, settings):
        self.settings = settings

    def announce_start(self):
        style = self.settings.style
        if style == "kv":
            log.info("phase=%s start", self.name)
        elif style == "words":
            log.info("Starting %s", self.name)
        elif style == "banner":
            log.info("=== %s ===", self.name)
        else:
            log.info("step %s: begin", self.name)

    def announce_end(self, elapsed):
        style = self.settings.style
        if style == "kv":
            log.info("phase=%s done in %.3fs", self.name, elapsed)
        elif style == "words":
            log.info("Finished %s in %.3fs", self.name, elapsed)
        elif style == "custom":
            log.info("step %s: end (%.3fs)", self.name, elapsed)
        else:
            log.info("%s took %.3fs", self.name, elapsed)

    def __call__(self, state):
        self.announce_start()
        t0 = time.monotonic()
        self.run(state)
        elapsed = time.monotonic() - t0
        self.announce_end(elapsed)
        state.setdefault("durations", {})[self.name] = elapsed


class Connection:
    def __init__(self, n):
        self.n = n

    def get(self, source):
        time.sleep(0.12)  # the network
        return ("payload-%d " % source) * 50


class Pool:
    def __init__(self, size):
        self._free = queue.Queue()
        for i in range(size):
            self._free.put(Connection(i))

    def request(self, source):
        conn = self._free.get()
        try:
            return conn.get(source)
        finally:
            self._free.put(conn)


class LoadConfig(Stage):
    name = "load_config"

    def run(self, state):
        time.sleep(0.3)
        state["config"] = {"region": "eu", "batch": self.settings.records}


class Fetch(Stage):
    name = "fetch"

    def run(self, state):
        pool = Pool(self.settings.pool_size)
        results = [None] * self.settings.sources
        attempts = {}

        def worker(indices):
            for i in indices:
                attempts[i] = attempts.get(i, 0) + 1
                if i % 7 == 3 and attempts[i] == 1:
                    log.warning("source %d timed out, retrying", i)
                    attempts[i] += 1
                results[i] = pool.request(i)

        chunks = [list(range(k, self.settings.sources, self.settings.pool_size))
                  for k in range(self.settings.pool_size)]
        threads = [threading.Thread(target=worker, args=(c,), name="fetch-%d" % k)
                   for k, c in enumerate(chunks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        state["pages"] = results


class Enrich(Stage):
    name = "enrich"

    def score(self, record):
        h = hashlib.blake2b(digest_size=8)
        total = 0
        for ch in record:
            total = (total * 31 + ord(ch)) & 0xFFFFFFFF
        h.update(total.to_bytes(4, "little"))
        return h.hexdigest()

    def run(self, state):
        scored = []
        deadline = time.monotonic() + 1.6
        pages = state["pages"]
        i = 0
        while time.monotonic() < deadline:
            scored.append(self.score(pages[i % len(pages)][:400]))
            i += 1
        state["scores"] = scored


class BuildIndex(Stage):
    name = "build_index"

    def run(self, state):
        index = {}
        for n in range(self.settings.records):
            key = "record-%08d" % n
            index[key] = [n, key.upper(), bytearray(256)]
        state["index"] = index
        time.sleep(0.2)


class Notify(Stage):
    name = "notify"

    def run(self, state):
        time.sleep(state.get("linger", 0.0))


class Publish(Stage):
    name = "publish"

    def run(self, state):
        with tempfile.NamedTemporaryFile("w", delete=True) as f:
            for key in list(state["index"])[:50_000]:
                f.write(key + "\n")
            f.flush()
            os.fsync(f.fileno())
        time.sleep(0.3)


def make_noise():
    sys.stderr.write("x" * (2 * 1024 * 1024))
    sys.stderr.flush()
    time.sleep(0.2)
    sys.stderr.write("\n")
    sys.stderr.flush()
    out = sys.stdout.buffer
    out.write(bytes(range(256)) * 64 + b"\n")
    out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--style", default="kv", choices=["kv", "words", "banner", "custom"])
    ap.add_argument("--log")
    ap.add_argument("--rotate", type=int, default=0)
    ap.add_argument("--noise", action="store_true")
    ap.add_argument("--linger", type=float, default=0.0)
    ap.add_argument("--truncate", action="store_true")
    args = ap.parse_args()
    if args.log and args.rotate:
        handler = logging.handlers.RotatingFileHandler(args.log, maxBytes=args.rotate,
                                                       backupCount=3)
    elif args.log:
        handler = logging.FileHandler(args.log, mode="w")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG, handlers=[handler])
    if args.noise:
        make_noise()
    settings = Settings(args.style)
    state = {"linger": args.linger}
    stages = [LoadConfig, Fetch, Enrich, BuildIndex, Publish]
    if args.linger:
        stages.append(Notify)
    for stage in stages:
        stage(settings)(state)
        if args.rotate:
            for k in range(40):  # chatter that makes the handler rotate
                log.debug("flushed block %d of stage %s", k, stage.name)
        if args.truncate and stage is Fetch:
            time.sleep(0.5)
            handler.acquire()
            try:
                handler.stream.seek(0)
                handler.stream.truncate()
            finally:
                handler.release()
    # What the program measured itself, for the test to compare.
    print("durations " + " ".join("%s=%.4f" % kv for kv in state["durations"].items()),
          flush=True)


if __name__ == "__main__":
    main()
