"""py_small: one function holds many small objects (tuples, strings, floats:
each well under pymalloc's 512-byte limit) at the peak. Prints the bytes they
take by sys.getsizeof (the sizes CPython asks its object allocator for), and
the PYTHONMALLOC the interpreter saw, for tests/integration/test_alloc_pymalloc.py.
argv[1]: objects (default 200000)."""
import os
import sys


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
    # No wait before exiting: sonde names the Python frames from the agent's
    # descriptions of the code objects, not from the live process.


if __name__ == "__main__":
    main()
