"""py_nightly_report: a nightly sales report job, written the way such jobs
are: logging with phase markers, a client class for the inventory service
(tests/workloads/py_inventory_service.py, started apart), a matcher, a
writer.

    extract  the catalogue items the sales name, from the inventory service
    match    each sale to its catalogue item by normalised title
    write    the report as CSV

--mode planted has two mistakes, each in its own method:
- Extractor.fetch_catalogue asks for the items one request at a time
  (InventoryClient.item): the phase waits on one round trip after another;
- Matcher.match_all scans the whole catalogue for each sale, normalising
  every title again (Matcher._normalize): the phase is CPU-bound there.
--mode fixed asks for them in batches (InventoryClient.items) and matches
through an index built once.

usage: py_nightly_report.py --port PORT [--mode planted|fixed] [--items N]
       [--sales N] [--out FILE]"""
import argparse
import csv
import http.client
import json
import logging
import os
import random
import tempfile
import time

log = logging.getLogger("nightly")


class InventoryClient:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def _get(self, path):
        self.conn.request("GET", path)
        resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError("inventory: %s -> %d" % (path, resp.status))
        return json.loads(body)

    def item(self, item_id):
        return self._get("/items/%d" % item_id)

    def items(self, ids):
        return self._get("/items?ids=" + ",".join(str(i) for i in ids))


class Extractor:
    BATCH = 100

    def __init__(self, client, mode):
        self.client = client
        self.mode = mode

    def fetch_catalogue(self, ids):
        if self.mode == "planted":
            return [self.client.item(i) for i in ids]
        out = []
        for k in range(0, len(ids), self.BATCH):
            out.extend(self.client.items(ids[k:k + self.BATCH]))
        return out


class Matcher:
    def __init__(self, catalogue, mode):
        self.catalogue = catalogue
        self.mode = mode
        self.index = None
        if mode == "fixed":
            self.index = {self._normalize(it["title"]): it for it in catalogue}

    @staticmethod
    def _normalize(title):
        words = title.lower().replace("-", " ").split()
        return " ".join(w for w in words if w not in ("the", "of", "range"))

    def match(self, sale):
        key = self._normalize(sale["title"])
        if self.index is not None:
            return self.index.get(key)
        for it in self.catalogue:
            if self._normalize(it["title"]) == key:
                return it
        return None

    def match_all(self, sales):
        return [(s, self.match(s)) for s in sales]


class ReportWriter:
    def __init__(self, path):
        self.path = path

    def write(self, matched):
        with open(self.path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["sale", "sku", "title", "qty", "amount_cents"])
            for sale, it in matched:
                if it is None:
                    continue
                w.writerow([sale["id"], it["sku"], it["title"], sale["qty"],
                            sale["qty"] * it["price_cents"]])


def sales_export(n_sales, ids):
    """The day's sales, as the shop's export gives them: titles typed by hand."""
    rng = random.Random(7)
    out = []
    for k in range(n_sales):
        i = rng.choice(ids)
        cat = ("garden", "kitchen", "tools", "toys", "books", "office")[i % 6]
        title = "item %d of the %s range" % (i % 900, cat)
        out.append({"id": k, "title": title.upper() if k % 3 == 0 else title,
                    "qty": 1 + k % 4})
    return out


def phase(name, fn, *args):
    log.info("phase=%s start", name)
    t0 = time.monotonic()
    result = fn(*args)
    log.info("phase=%s done in %.2fs", name, time.monotonic() - t0)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--mode", choices=("planted", "fixed"), default="planted")
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--sales", type=int, default=20000)
    ap.add_argument("--out")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ids = list(range(1000, 1000 + a.items))
    sales = sales_export(a.sales, ids)
    client = InventoryClient(a.port)
    catalogue = phase("extract", Extractor(client, a.mode).fetch_catalogue, ids)
    matched = phase("match", Matcher(catalogue, a.mode).match_all, sales)
    out = a.out or os.path.join(tempfile.gettempdir(), "nightly-report-%d.csv" % os.getpid())
    phase("write", ReportWriter(out).write, matched)
    if not a.out:
        os.unlink(out)
    log.info("report: %d sales, %d matched", len(sales), sum(1 for _, it in matched if it))


if __name__ == "__main__":
    main()
