"""py_page_cache: a page renderer with a module-level cache of rendered pages.

--mode unbounded (default): the cache is never evicted: it holds every page
  rendered (about 180 MiB for 40 000 pages) until the program ends, when the
  interpreter frees it; Renderer.render is where that memory is held.
--mode bounded: the cache keeps the 1 000 most recent pages (an OrderedDict
  pruned as it grows): the same work in a few MiB.
--mode index: the pages are built once, up front, into a site index that
  the rest of the run serves lookups from until it ends: a working set held
  to the end, not a leak.

usage: py_page_cache.py [--mode unbounded|bounded|index] [PAGES]"""
import argparse
import collections
import logging
import time

log = logging.getLogger("pages")
_CACHE = collections.OrderedDict()
_LIMIT = None


class Renderer:
    def render(self, key):
        rows = "".join("<tr><td>%s</td><td>%d</td></tr>" % (key, j) for j in range(120))
        page = "<html><table>%s</table></html>" % rows
        _CACHE[key] = page
        if _LIMIT is not None and len(_CACHE) > _LIMIT:
            _CACHE.popitem(last=False)  # the oldest page goes
        return len(page)


class SiteIndex:
    def __init__(self, keys):
        self.pages = {k: ("<html>%s</html>" % k) * 200 for k in keys}

    def serve(self, seconds):
        served, end = 0, time.monotonic() + seconds
        keys = list(self.pages)
        while time.monotonic() < end:
            for k in keys[:2000]:
                served += self.pages[k].count("page")
        return served


def main():
    global _LIMIT
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("unbounded", "bounded", "index"), default="unbounded")
    ap.add_argument("pages", nargs="?", type=int, default=40000)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    if a.mode == "index":
        index = SiteIndex("page-%d" % i for i in range(a.pages))
        log.info("served %d", index.serve(2.0))
        return
    if a.mode == "bounded":
        _LIMIT = 1000
    r = Renderer()
    total = sum(r.render("page-%d" % i) for i in range(a.pages))
    log.info("rendered %d bytes", total)


main()
