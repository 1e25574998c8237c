"""Price sync: refreshes the price of every SKU from a pricing service, with
requests issued from a thread pool. The service answers each request after
about 20 ms (a fake client stands in for the HTTP one). Planted: the pool has
2 workers, so at most 2 requests are ever in flight; fixed: 32.

usage: py_price_sync.py [--fixed] [SKUS] (default 240)
"""
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


class PricingClient:
    """A stand-in for the HTTP client: each call waits for the service."""

    def __init__(self, latency_s=0.02):
        self.latency_s = latency_s
        self.calls = 0
        self.lock = threading.Lock()

    def get_price(self, sku):
        time.sleep(self.latency_s)  # the round trip to the pricing service
        with self.lock:
            self.calls += 1
        return round(random.Random(sku).uniform(1, 100), 2)


class PriceSync:
    def __init__(self, client, workers):
        self.client = client
        self.workers = workers

    def refresh(self, skus):
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="prices") as pool:
            return dict(zip(skus, pool.map(self.client.get_price, skus)))


def main():
    args = sys.argv[1:]
    fixed = "--fixed" in args
    args = [a for a in args if a != "--fixed"]
    n = int(args[0]) if args else 240
    skus = ["SKU-%05d" % i for i in range(n)]
    prices = PriceSync(PricingClient(), 32 if fixed else 2).refresh(skus)
    print(len(prices), "prices")


if __name__ == "__main__":
    main()
