"""A price-refresh job written the way such services are: logging, argparse,
a config object, a client class that owns an HTTP client with a connection
pool, a service class that fans the work out with asyncio.gather. The
backend is a local HTTP server on 127.0.0.1 (http.server, a fixed latency
per request): `--serve` runs it alone and prints its URL (a test starts it
outside the profiled process), `--backend URL` points the job at it, and
without either the job starts one in a thread of its own.

  --client aiohttp   aiohttp.ClientSession over a TCPConnector(limit=N)
  --client httpx     httpx.AsyncClient with Limits(max_connections=N)

  --mode planted     PriceClient keeps the library's pool small (4
                     connections) while PriceRefresher.refresh_all gathers
                     a request per SKU (240): they queue for the pool
  --mode fixed       the pool sized to the concurrency wanted (32) and the
                     fan-out bounded by a Semaphore of the pool's size

Exits 3 when the client library is missing."""
import argparse
import asyncio
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger("prices")


class Config:
    def __init__(self, mode, client):
        self.client = client
        self.skus = 240
        self.latency_s = 0.03
        self.connections = 4 if mode == "planted" else 32
        self.bound_fanout = mode == "fixed"


class PriceHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"      # keep-alive: the client pools connections
    latency_s = 0.03

    def do_GET(self):
        time.sleep(self.latency_s)
        sku = self.path.rsplit("/", 1)[-1]
        body = json.dumps({"sku": sku, "price_cents": 100 + len(sku)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Backend:
    """The pricing backend stand-in, on an ephemeral port of 127.0.0.1."""

    def __init__(self, latency_s):
        PriceHandler.latency_s = latency_s
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), PriceHandler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="backend",
                                       daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class PriceClient:
    """The pricing API's client: one pooled HTTP client for the job."""

    def __init__(self, base_url, connections, library):
        self.base_url = base_url
        self.library = library
        if library == "aiohttp":
            import aiohttp
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=connections),
                timeout=aiohttp.ClientTimeout(total=120))
        else:
            import httpx
            self.session = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=connections),
                timeout=httpx.Timeout(120.0))

    async def price(self, sku):
        url = "%s/prices/%s" % (self.base_url, sku)
        if self.library == "aiohttp":
            async with self.session.get(url) as resp:
                resp.raise_for_status()
                return await resp.json()
        resp = await self.session.get(url)
        resp.raise_for_status()
        return resp.json()

    async def close(self):
        if self.library == "aiohttp":
            await self.session.close()
        else:
            await self.session.aclose()


class PriceRefresher:
    def __init__(self, client, config):
        self.client = client
        self.config = config

    async def refresh_all(self, skus):
        if self.config.bound_fanout:
            slots = asyncio.Semaphore(self.config.connections)

            async def bounded(sku):
                async with slots:
                    return await self.client.price(sku)
            prices = await asyncio.gather(*(bounded(s) for s in skus))
        else:
            prices = await asyncio.gather(*(self.client.price(s) for s in skus))
        return {p["sku"]: p["price_cents"] for p in prices}


async def run(config, backend_url):
    client = PriceClient(backend_url, config.connections, config.client)
    try:
        refresher = PriceRefresher(client, config)
        skus = ["sku-%05d" % i for i in range(config.skus)]
        started = time.monotonic()
        log.info("phase=refresh start")
        prices = await refresher.refresh_all(skus)
        log.info("phase=refresh done in %.2fs", time.monotonic() - started)
        log.info("refreshed %d prices", len(prices))
    finally:
        await client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("planted", "fixed"), default="planted")
    parser.add_argument("--client", choices=("aiohttp", "httpx"), default="aiohttp")
    parser.add_argument("--backend", help="the pricing backend's URL")
    parser.add_argument("--serve", action="store_true", help="only run the backend")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if not args.serve:
            __import__(args.client)
    except ImportError as e:
        print("no %s here: %s" % (args.client, e))
        return 3
    config = Config(args.mode, args.client)
    if args.serve:
        with Backend(config.latency_s) as backend:
            print(backend.url, flush=True)
            backend.thread.join()
    elif args.backend:
        asyncio.run(run(config, args.backend))
    else:
        with Backend(config.latency_s) as backend:
            asyncio.run(run(config, backend.url))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
