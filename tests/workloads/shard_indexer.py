"""Builds a term index of a synthetic document corpus with a small service of
processes, the way such batch services are often written with
multiprocessing: a coordinator process hands out shards on a queue and
gathers the partial indexes, four indexer processes tokenize their shards.
The shards are uneven, as real ones are: one holds most of the documents, so
one indexer does most of the work while the others idle.

Prints "indexed N documents, M terms" at the end."""
import argparse
import logging
import multiprocessing as mp
import random
import re
from collections import Counter

log = logging.getLogger("indexer")
WORD = re.compile(r"[a-z]+")
VOCAB = ["".join(random.Random(i).choice("etaoinshrdlu") for _ in range(3 + i % 7))
         for i in range(5000)]


def make_document(seed):
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(120))


def count_terms(text):
    terms = Counter()
    for word in WORD.findall(text):
        terms[word.lower()] += 1
    return terms


def index_shard(shard):
    index = Counter()
    for seed in range(shard["first"], shard["first"] + shard["documents"]):
        index.update(count_terms(make_document(seed)))
    return index


def indexer(jobs, results):
    while True:
        shard = jobs.get()
        if shard is None:
            break
        results.put((shard["id"], shard["documents"], index_shard(shard)))


def coordinate(shards, jobs, results, workers, done):
    for shard in shards:
        jobs.put(shard)
    for _ in range(workers):
        jobs.put(None)
    merged, documents = Counter(), 0
    for _ in shards:
        _, n, part = results.get()
        merged.update(part)
        documents += n
    done.put((documents, len(merged)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--documents", type=int, default=24000)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(processName)s %(message)s")
    big = args.documents * 85 // 100
    sizes = [big] + [(args.documents - big) // 7] * 7
    shards, first = [], 0
    for i, n in enumerate(sizes):
        shards.append({"id": i, "first": first, "documents": n})
        first += n
    jobs, results, done = mp.Queue(), mp.Queue(), mp.Queue()
    procs = [mp.Process(target=coordinate, name="coordinator",
                        args=(shards, jobs, results, args.workers, done))]
    procs += [mp.Process(target=indexer, name=f"indexer-{i}", args=(jobs, results))
              for i in range(args.workers)]
    for p in procs:
        p.start()
    documents, terms = done.get()
    for p in procs:
        p.join()
    log.info("indexed %d documents, %d terms", documents, terms)
    print(f"indexed {documents} documents, {terms} terms", flush=True)


if __name__ == "__main__":
    main()
