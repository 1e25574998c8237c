"""py_fanout: an asyncio crawler written as such code usually is: a Crawler
class whose crawl() fans out one task per URL with asyncio.gather, around its
own log markers; with --bounded a PoliteCrawler, whose crawl() makes each
fetch take an asyncio.Semaphore first.

usage: py_fanout.py [--bounded] [N]
"""
import asyncio
import logging
import sys
import time

log = logging.getLogger("crawler")


class Crawler:
    async def fetch(self, url):
        await asyncio.sleep(0.05)  # the network
        return url.upper()

    async def crawl(self, urls):
        log.info("Starting crawl of %d sources", len(urls))
        t0 = time.monotonic()
        pages = await asyncio.gather(*(self.fetch(u) for u in urls))
        log.info("crawl done in %.2fs", time.monotonic() - t0)
        return pages


class PoliteCrawler:
    async def fetch(self, url):
        await asyncio.sleep(0.05)  # the network
        return url.upper()

    async def crawl(self, urls):
        log.info("Starting polite crawl of %d sources", len(urls))
        t0 = time.monotonic()
        sem = asyncio.Semaphore(20)

        async def one(url):
            async with sem:
                return await self.fetch(url)

        pages = await asyncio.gather(*(one(u) for u in urls))
        log.info("polite crawl done in %.2fs", time.monotonic() - t0)
        return pages


async def main():
    bounded = "--bounded" in sys.argv
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), "400"))
    crawler = PoliteCrawler() if bounded else Crawler()
    pages = await crawler.crawl(["https://example.org/%d" % i for i in range(n)])
    time.sleep(0.5)
    print("pages", len(pages))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(main())
