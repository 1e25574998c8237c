"""Backup verifier: checks the blocks of a backup set against their expected
digests, spread over a multiprocessing pool. The pool's size comes from the
command line, and ops set it high ("more workers, faster") on a small VM.

usage: py_pool_verify.py [WORKERS] [BLOCKS] (defaults 8 and 32)
"""
import hashlib
import multiprocessing
import random
import sys

BLOCK_BYTES = 6 << 20


def read_block(block_id):
    """Stands in for reading a block of the backup from disk."""
    return random.Random(block_id).randbytes(BLOCK_BYTES)


def verify_block(block_id):
    data = read_block(block_id)
    digest = hashlib.blake2b(data, digest_size=32).hexdigest()
    for _ in range(3):  # the block's three replicas are compared too
        digest = hashlib.blake2b(data + digest.encode(), digest_size=32).hexdigest()
    return block_id, digest


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    with multiprocessing.Pool(processes=workers) as pool:
        results = pool.map(verify_block, range(blocks))
    print("verified", len(results), "blocks")


if __name__ == "__main__":
    main()
