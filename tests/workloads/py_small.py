"""py_small: one function holds many small objects (tuples, strings, floats:
each well under pymalloc's 512-byte limit) at the peak. Prints the bytes they
take by sys.getsizeof (the sizes CPython asks its object allocator for), and
the PYTHONMALLOC the interpreter saw, for tests/integration/test_alloc_pymalloc.py.
argv[1]: objects (default 200000)."""
import os
import sys
import time


def build_small(n):
    return [("k%d" % i, i * 0.5) for i in range(n)]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    keep = build_small(n)
    held = sys.getsizeof(keep) + sum(
        sys.getsizeof(t) + sys.getsizeof(t[0]) + sys.getsizeof(t[1]) for t in keep)
    print("held_bytes=%d" % held)
    print("pythonmalloc=%s" % os.environ.get("PYTHONMALLOC", ""))
    del keep
    # sonde names Python frames by reading the live process (docs/memory.md):
    # stay a moment, so a slow (sanitized) reader gets to the last records;
    # in make check beside another test its reads came after a 1 s wait.
    time.sleep(3.0)


if __name__ == "__main__":
    main()
