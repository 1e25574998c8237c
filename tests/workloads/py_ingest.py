"""py_ingest: an access-log ingester. It parses each line of a web server's
log and stores the hits in a SQLite database, the way a small service's
nightly job would.

usage: py_ingest.py LOG DB ROWS [planted|fixed]

It first writes ROWS lines of a made-up access log to LOG. planted: HitStore
commits after every insert (each commit waits for the disk); fixed: the hits
go in batches of 500, each one transaction (executemany, one commit).
Prints "ingested N hits in S s" at the end."""
import logging
import random
import re
import sqlite3
import sys
import time

log = logging.getLogger("ingest")

LINE = re.compile(r'(?P<ip>\d+\.\d+\.\d+\.\d+) - - \[(?P<ts>[^\]]+)\] '
                  r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/1\.1" (?P<status>\d+) (?P<size>\d+)')


def write_access_log(path, rows):
    rng = random.Random(7)
    with open(path, "w") as f:
        for i in range(rows):
            f.write('10.1.%d.%d - - [28/Nov/2026:10:%02d:%02d +0000] "GET /api/items/%d HTTP/1.1" '
                    '%d %d\n' % (rng.randint(0, 255), rng.randint(1, 254), i // 60 % 60, i % 60,
                                 rng.randint(1, 5000), rng.choice((200, 200, 200, 304, 404)),
                                 rng.randint(120, 9000)))


class HitStore:
    """The hits table of the reporting database."""

    def __init__(self, path):
        self.db = sqlite3.connect(path)
        self.db.execute("DROP TABLE IF EXISTS hits")
        self.db.execute("CREATE TABLE hits (ip TEXT, path TEXT, status INTEGER, bytes INTEGER)")
        self.db.commit()

    def add(self, hit):
        self.db.execute("INSERT INTO hits VALUES (?, ?, ?, ?)", hit)
        self.db.commit()

    def add_many(self, hits):
        with self.db:
            self.db.executemany("INSERT INTO hits VALUES (?, ?, ?, ?)", hits)

    def close(self):
        self.db.close()


def parse(line):
    m = LINE.match(line)
    if not m:
        return None
    return m["ip"], m["path"], int(m["status"]), int(m["size"])


def ingest(log_path, store, batched):
    n = 0
    batch = []
    with open(log_path) as f:
        for line in f:
            hit = parse(line)
            if hit is None:
                continue
            if batched:
                batch.append(hit)
                if len(batch) == 500:
                    store.add_many(batch)
                    batch = []
            else:
                store.add(hit)
            n += 1
    if batch:
        store.add_many(batch)
    return n


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log_path, db_path, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batched = len(sys.argv) > 4 and sys.argv[4] == "fixed"
    write_access_log(log_path, rows)
    store = HitStore(db_path)
    start = time.monotonic()
    n = ingest(log_path, store, batched)
    store.close()
    log.info("ingested %d hits in %.2f s", n, time.monotonic() - start)


if __name__ == "__main__":
    main()
