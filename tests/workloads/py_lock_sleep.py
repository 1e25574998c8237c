"""py_lock_sleep: a small service with a shared cache, written the way such
code is: worker threads answer lookups through a PriceCache whose entries go
stale; the cache refreshes a stale entry while holding its lock, and the
refresh calls a slow backend (a sleep standing for the network). Every other
worker then waits for the lock in PriceCache.get. With --fixed the refresh
fetches outside the lock and only the swap is locked.

usage: py_lock_sleep.py [SECONDS] [--fixed]
"""
import sys
import threading
import time


class Backend:
    def fetch_prices(self, symbols):
        time.sleep(0.04)  # the network
        return {s: len(s) * 1.5 for s in symbols}


class PriceCache:
    def __init__(self, backend, ttl_s=0.05):
        self._backend = backend
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._prices = {}
        self._loaded_at = 0.0

    def _stale(self):
        return time.monotonic() - self._loaded_at > self._ttl_s

    def get(self, symbol, fixed=False):
        if fixed:
            if self._stale():
                fresh = self._backend.fetch_prices(["ACME", "INIT", "WIDG"])
                with self._lock:
                    self._prices, self._loaded_at = fresh, time.monotonic()
            with self._lock:
                return self._prices.get(symbol)
        with self._lock:
            if self._stale():
                self._refresh()
            return self._prices.get(symbol)

    def _refresh(self):
        self._prices = self._backend.fetch_prices(["ACME", "INIT", "WIDG"])
        self._loaded_at = time.monotonic()


def worker(cache, until, fixed, counts, k):
    n = 0
    while time.monotonic() < until:
        cache.get("ACME", fixed)
        sum(i * i for i in range(200))  # the rest of the request
        n += 1
    counts[k] = n


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1][0].isdigit() else 3.0
    fixed = "--fixed" in sys.argv
    cache = PriceCache(Backend())
    until = time.monotonic() + seconds
    counts = [0] * 4
    threads = [threading.Thread(target=worker, args=(cache, until, fixed, counts, k),
                                name="request-%d" % k) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("requests", sum(counts))


if __name__ == "__main__":
    main()
