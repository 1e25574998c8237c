"""py_page_cache: a page renderer whose module-level cache is never evicted:
it holds every rendered page (about 180 MiB for 40 000 pages) until the
program ends, when the interpreter frees it. Renderer.render is where the
memory is held. usage: py_page_cache.py [PAGES]"""
import logging
import sys

log = logging.getLogger("pages")
_CACHE = {}


class Renderer:
    def render(self, key):
        page = ("<html>%s</html>" % key) * 200
        _CACHE[key] = page  # never evicted: grows with every key
        return len(page)


def main():
    logging.basicConfig(level=logging.INFO)
    pages = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    r = Renderer()
    total = sum(r.render("page-%d" % i) for i in range(pages))
    log.info("rendered %d bytes", total)


main()
