"""py_async_pipeline: an asyncio ingest job written the way such services are
written: logging with timestamps, argparse, one class per stage, and a fake
HTTP-like client with a connection pool in front of a simulated network.

It plans N sources, fetches each one, scores the payloads, summarizes them into
about 200 records and publishes those to a sink that is coming back from an
outage. Every stage is logged as "phase=<name> start" and
"phase=<name> done in <s>s", timed by the program itself with perf_counter.

usage: py_async_pipeline.py [--mode planted|fixed] [--sources N] [--seed S]

What --mode planted gets wrong (P) and what --mode fixed does instead (F):
  P Fetcher.fetch_all: gathers all N fetches at once, each on a fresh connection
  F Fetcher.fetch_all: 32 workers over an asyncio.Queue, via the ConnectionPool
  P SourceClient.fetch: a fresh connection (and its 64 KiB receive buffer) per
    fetch, 1200 at once
  F SourceClient.fetch: pooled connections, 32 buffers in all
  P SourceClient._roundtrip: the 7th source, a slow mirror, holds fetch 4 s
  F Fetcher._fetch_one: asyncio.wait_for(..., 0.3), then a stale cached copy
  P Enricher.enrich_all: Enricher._score on the loop thread, ~100 ms a chunk
  F Enricher.enrich_all: batches of 100 to a thread pool via run_in_executor
  P Auditor.audit: a synchronous audit client's round trips on the loop thread
  F Auditor.audit: the same client in the default executor (run_in_executor)
  P Publisher._send_with_retry: 200 sends at once, all retrying every 0.1 s
  F Publisher._send_with_backoff: full-jitter backoff, 16 sends at a time
  P GeoClient.__init__: the geocoder's pool left at 2 connections, for 200
    lookups gathered at once
  F GeoClient.__init__: a pool of 32 connections, what the geocoder allows

Runs on CPython 3.8 to 3.13 with the standard library only; deterministic for
a given --seed (apart from how retries fall against the sink's outage clock).
"""
import argparse
import asyncio
import base64
import concurrent.futures
import contextlib
import hashlib
import json
import logging
import random
import socket
import threading
import time

log = logging.getLogger("pipeline")
client_log = logging.getLogger("pipeline.client")
publish_log = logging.getLogger("pipeline.publish")

GATEWAY = "ingest-gw.internal.example"
SLOW_MIRROR = "archive-mirror-2.example.net"
SLOW_MIRROR_DELAY = 4.0
RECV_BUFFER_BYTES = 64 * 1024
REGIONS = ("eu-west", "eu-central", "us-east", "us-west", "ap-south")


class Config:
    def __init__(self, args):
        self.mode = args.mode
        self.sources = args.sources
        self.seed = args.seed
        self.pool_size = 32
        self.fetch_workers = 32
        self.fetch_timeout = 0.3
        self.score_rounds = 5000
        self.score_chunk = 100
        self.buckets = 200
        self.publish_concurrency = 16
        self.geo_connections = 2 if args.mode == "planted" else 32
        self.outage = 1.5
        self.max_attempts = 20

    @property
    def planted(self):
        return self.mode == "planted"


@contextlib.contextmanager
def phase(name, timings):
    log.info("phase=%s start", name)
    t0 = time.perf_counter()
    yield
    elapsed = time.perf_counter() - t0
    timings[name] = elapsed
    log.info("phase=%s done in %.2fs", name, elapsed)


# The client: a simulated network, connections to it and a pool of them.

class Connection:
    def __init__(self, client, conn_id):
        self._client = client
        self.conn_id = conn_id
        self.closed = False
        # Each connection reads responses into a buffer of its own.
        self._recv_buffer = bytearray(RECV_BUFFER_BYTES)

    async def get(self, source):
        if self.closed:
            raise RuntimeError("connection %d is closed" % self.conn_id)
        return await self._client._roundtrip(source)

    def close(self):
        self.closed = True


class ConnectionPool:
    """At most `size` connections to the gateway; idle ones are reused."""

    def __init__(self, client, size):
        self._client = client
        self._slots = asyncio.Semaphore(size)
        self._idle = []
        self.opened = 0

    @contextlib.asynccontextmanager
    async def connection(self):
        async with self._slots:
            if self._idle:
                conn = self._idle.pop()
            else:
                conn = await self._client.connect()
                self.opened += 1
            try:
                yield conn
            except BaseException:
                conn.close()
                raise
            else:
                self._idle.append(conn)


class SourceClient:
    def __init__(self, seed, pool_size):
        self._seed = seed
        self._next_id = 0
        self.pool = ConnectionPool(self, pool_size)

    async def connect(self):
        self._next_id += 1
        await asyncio.sleep(0.008)  # TCP + TLS handshake with the gateway
        return Connection(self, self._next_id)

    async def fetch(self, source, conn=None):
        """GET the source; without a pooled connection, open a fresh one."""
        if conn is None:
            conn = await self.connect()
        raw = await conn.get(source)
        response = json.loads(raw.decode("utf-8"))
        if response["status"] != 200:
            raise RuntimeError("%s: HTTP %d" % (source["url"], response["status"]))
        return response["body"]

    async def _roundtrip(self, source):
        rng = random.Random(self._seed * 1000003 + source["id"])
        latency = rng.uniform(0.015, 0.045)
        if source["host"] == SLOW_MIRROR:
            await asyncio.sleep(SLOW_MIRROR_DELAY)
        else:
            await asyncio.sleep(latency)
        data = base64.b64encode(rng.getrandbits(8 * 240).to_bytes(240, "little"))
        body = {
            "id": source["id"],
            "region": source["region"],
            "weight": source["weight"],
            "data": data.decode("ascii"),
            "stale": False,
        }
        return json.dumps({"status": 200, "body": body}).encode("utf-8")


class GeoClient:
    """The geocoding service's client: lookups go through a connection pool."""

    def __init__(self, max_connections):
        self.pool = ConnectionPool(self, max_connections)
        self.lookups = 0

    async def connect(self):
        await asyncio.sleep(0.005)
        return Connection(self, 0)

    async def lookup(self, region, key):
        async with self.pool.connection() as conn:
            raw = await conn.get({"region": region, "id": key})
        self.lookups += 1
        return json.loads(raw)

    async def _roundtrip(self, query):
        await asyncio.sleep(0.02)
        lat = (sum(map(ord, query["region"])) * 37 % 18000) / 100.0 - 90.0
        return json.dumps({"region": query["region"], "lat": lat, "id": query["id"]})


# The stages.

class Planner:
    def __init__(self, config):
        self.config = config

    def plan(self):
        rng = random.Random(self.config.seed)
        sources = []
        for i in range(self.config.sources):
            host = SLOW_MIRROR if i == 6 else GATEWAY
            sources.append({
                "id": i,
                "host": host,
                "url": "https://%s/v2/feeds/%05d.json" % (host, i),
                "region": rng.choice(REGIONS),
                "weight": round(rng.uniform(0.5, 2.0), 3),
            })
        return sources


class Fetcher:
    def __init__(self, config, client):
        self.config = config
        self.client = client
        self.fallbacks = 0

    async def fetch_all(self, sources):
        if self.config.planted:
            return await asyncio.gather(*(self.client.fetch(s) for s in sources))
        queue = asyncio.Queue()
        for index, source in enumerate(sources):
            queue.put_nowait((index, source))
        results = [None] * len(sources)
        workers = [asyncio.ensure_future(self._worker(queue, results))
                   for _ in range(self.config.fetch_workers)]
        await queue.join()
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        return results

    async def _worker(self, queue, results):
        while True:
            index, source = await queue.get()
            try:
                results[index] = await self._fetch_one(source)
            finally:
                queue.task_done()

    async def _fetch_one(self, source):
        try:
            async with self.client.pool.connection() as conn:
                return await asyncio.wait_for(
                    self.client.fetch(source, conn=conn), self.config.fetch_timeout)
        except asyncio.TimeoutError:
            self.fallbacks += 1
            client_log.warning("%s timed out after %.1fs, using cached copy",
                               source["url"], self.config.fetch_timeout)
            return {"id": source["id"], "region": source["region"],
                    "weight": source["weight"], "data": "", "stale": True}


class Enricher:
    def __init__(self, config):
        self.config = config

    async def enrich_all(self, payloads):
        chunk = self.config.score_chunk
        if self.config.planted:
            scores = []
            for start in range(0, len(payloads), chunk):
                for payload in payloads[start:start + chunk]:
                    scores.append(self._score(payload))
                await asyncio.sleep(0)
            return scores
        loop = asyncio.get_running_loop()
        batches = [payloads[i:i + chunk] for i in range(0, len(payloads), chunk)]
        with concurrent.futures.ThreadPoolExecutor(
                max_workers=2, thread_name_prefix="enrich") as executor:
            parts = await asyncio.gather(*(
                loop.run_in_executor(executor, self._score_batch, batch)
                for batch in batches))
        return [score for part in parts for score in part]

    def _score_batch(self, batch):
        return [self._score(payload) for payload in batch]

    def _score(self, payload):
        data = payload["data"]
        if not data:
            return 0.0
        n = len(data)
        acc = 0x811C9DC5
        hits = 0
        for i in range(self.config.score_rounds):
            c = ord(data[(i * 7) % n])
            acc = ((acc ^ c) * 0x01000193) & 0xFFFFFFFF
            if acc & 0xFF < c:
                hits += 1
        digest = hashlib.sha1(data.encode("ascii")).digest()
        return round(payload["weight"] * (hits + digest[0]) / 100.0, 4)


class Summarizer:
    def __init__(self, config):
        self.config = config

    def summarize(self, payloads, scores):
        buckets = {}
        for payload, score in zip(payloads, scores):
            buckets.setdefault(payload["id"] % self.config.buckets, []).append(
                (payload["region"], score))
        records = []
        for key in sorted(buckets):
            values = sorted(s for _, s in buckets[key])
            records.append({
                "id": key,
                "count": len(values),
                "mean": round(sum(values) / len(values), 4),
                "max": values[-1],
                "regions": sorted({r for r, _ in buckets[key]}),
            })
        stale = sum(1 for p in payloads if p["stale"])
        return {"sources": len(payloads), "stale": stale, "records": records,
                "mean_score": round(sum(scores) / max(1, len(scores)), 4)}


class AuditServer:
    """A local audit daemon: acknowledges each line it receives after a few
    milliseconds (it writes it to durable storage)."""

    def __init__(self, delay=0.003):
        self.delay = delay
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(4)
        self.address = self._listener.getsockname()
        threading.Thread(target=self._serve, name="audit-daemon", daemon=True).start()

    def _serve(self):
        while True:
            conn, _ = self._listener.accept()
            with conn, conn.makefile("rb") as lines:
                for _ in lines:
                    time.sleep(self.delay)
                    conn.sendall(b"ok\n")


class AuditClient:
    """The audit service's client library: synchronous, one round trip per
    record."""

    def __init__(self, address):
        self._sock = socket.create_connection(address)
        self._replies = self._sock.makefile("rb")

    def record(self, record):
        self._sock.sendall(json.dumps(record, sort_keys=True).encode() + b"\n")
        if self._replies.readline() != b"ok\n":
            raise RuntimeError("audit service refused a record")

    def record_all(self, records):
        for record in records:
            self.record(record)

    def close(self):
        self._replies.close()
        self._sock.close()


class Auditor:
    def __init__(self, config, client):
        self.config = config
        self.client = client

    async def audit(self, records):
        if self.config.planted:
            for record in records:
                self.client.record(record)
        else:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.client.record_all, records)
        log.info("audited %d records", len(records))


class SinkUnavailable(Exception):
    pass


class FlakySink:
    """A metrics sink that sheds load for a while after it comes back up."""

    def __init__(self, outage, rejections_per_record=3):
        self._outage_until = time.monotonic() + outage
        self._rejections = rejections_per_record
        self._rejected = {}
        self.accepted = []

    async def send(self, record):
        await asyncio.sleep(0.005)
        key = record["id"]
        if (time.monotonic() < self._outage_until
                and self._rejected.get(key, 0) < self._rejections):
            self._rejected[key] = self._rejected.get(key, 0) + 1
            raise SinkUnavailable("503 from sink for record %d" % key)
        self.accepted.append(key)


class Geocoder:
    """Places every record on the map: one lookup per record."""

    def __init__(self, client):
        self.client = client

    async def locate_all(self, records):
        places = await asyncio.gather(
            *(self.client.lookup(r["regions"][0], r["id"]) for r in records))
        for record, place in zip(records, places):
            record["lat"] = place["lat"]
        return len(places)


class Publisher:
    def __init__(self, config, sink):
        self.config = config
        self.sink = sink
        self.retries = 0

    async def publish_all(self, records):
        if self.config.planted:
            await asyncio.gather(*(self._send_with_retry(r) for r in records))
        else:
            slots = asyncio.Semaphore(self.config.publish_concurrency)

            async def bounded(record):
                async with slots:
                    await self._send_with_backoff(record)

            await asyncio.gather(*(bounded(r) for r in records))
        publish_log.info("published %d records, %d retries",
                         len(self.sink.accepted), self.retries)

    async def _send_with_retry(self, record):
        for attempt in range(1, self.config.max_attempts + 1):
            try:
                await self.sink.send(record)
                return
            except SinkUnavailable as exc:
                if attempt == self.config.max_attempts:
                    raise
                self.retries += 1
                publish_log.warning("send of record %d failed (%s), retrying in %.2fs",
                                    record["id"], type(exc).__name__, 0.1)
                await asyncio.sleep(0.1)

    async def _send_with_backoff(self, record, base=0.05, cap=2.0):
        rng = random.Random(self.config.seed * 7919 + record["id"])
        for attempt in range(self.config.max_attempts):
            try:
                await self.sink.send(record)
                return
            except SinkUnavailable as exc:
                if attempt + 1 == self.config.max_attempts:
                    raise
                self.retries += 1
                delay = rng.uniform(0, min(cap, base * 2 ** attempt))
                publish_log.warning("send of record %d failed (%s), retrying in %.2fs",
                                    record["id"], type(exc).__name__, delay)
                await asyncio.sleep(delay)


# Wiring.

async def watch_loop_lag(stats, interval=0.05):
    loop = asyncio.get_running_loop()
    while True:
        t0 = loop.time()
        await asyncio.sleep(interval)
        stats["max_lag"] = max(stats["max_lag"], loop.time() - t0 - interval)


async def run_pipeline(config):
    log.info("starting: mode=%s sources=%d seed=%d", config.mode, config.sources,
             config.seed)
    timings = {}
    lag = {"max_lag": 0.0}
    watcher = asyncio.ensure_future(watch_loop_lag(lag))
    client = SourceClient(config.seed, config.pool_size)

    with phase("plan", timings):
        sources = Planner(config).plan()
        log.info("planned %d sources across %d regions", len(sources), len(REGIONS))

    with phase("fetch", timings):
        fetcher = Fetcher(config, client)
        payloads = await fetcher.fetch_all(sources)
        log.info("fetched %d payloads (%d from cache, %d connections opened)",
                 len(payloads), fetcher.fallbacks, client.pool.opened)

    with phase("enrich", timings):
        scores = await Enricher(config).enrich_all(payloads)
        log.info("scored %d payloads", len(scores))

    with phase("summarize", timings):
        report = Summarizer(config).summarize(payloads, scores)
        log.info("report: %d records, mean score %.3f, %d stale sources",
                 len(report["records"]), report["mean_score"], report["stale"])
        audit = AuditClient(AuditServer().address)
        await Auditor(config, audit).audit(report["records"])
        audit.close()

    with phase("geocode", timings):
        geo = GeoClient(config.geo_connections)
        located = await Geocoder(geo).locate_all(report["records"])
        log.info("located %d records (%d connections)", located, geo.pool.opened)

    with phase("publish", timings):
        sink = FlakySink(config.outage)
        await Publisher(config, sink).publish_all(report["records"])

    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    log.info("event loop lag: max %.0f ms", lag["max_lag"] * 1000)
    log.info("total %.2fs (%s)", sum(timings.values()),
             ", ".join("%s %.2fs" % kv for kv in timings.items()))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="async ingest pipeline")
    parser.add_argument("--mode", choices=("planted", "fixed"), default="planted")
    parser.add_argument("--sources", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=1)
    return parser.parse_args(argv)


async def main(argv=None):
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    await run_pipeline(Config(parse_args(argv)))


if __name__ == "__main__":
    asyncio.run(main())
