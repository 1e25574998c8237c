"""py_tiny_reads: a log-ingest service that reads its input file line by line
the way a quick port of socket code does: the file opened unbuffered
(buffering=0), so every line is read one byte at a time (RawIOBase.readline
asks the kernel for one byte per call). It counts the status codes and
prints JSON: {"lines": N, "bytes": B} of what it read.

usage: py_tiny_reads.py FILE [LINES]   (writes FILE first when LINES is given)"""
import json
import sys


def write_input(path, lines):
    with open(path, "w") as f:
        for i in range(lines):
            f.write("GET /item/%d %d\n" % (i, 200 if i % 7 else 404))


def count_statuses(path):
    counts = {}
    read = 0
    with open(path, "rb", buffering=0) as f:
        for line in f:  # one read(2) of 1 byte per byte of the file
            read += len(line)
            status = line.rsplit(b" ", 1)[-1].strip()
            counts[status] = counts.get(status, 0) + 1
    return counts, read


def main():
    path = sys.argv[1]
    if len(sys.argv) > 2:
        write_input(path, int(sys.argv[2]))
    counts, read = count_statuses(path)
    print(json.dumps({"lines": sum(counts.values()), "bytes": read}))


if __name__ == "__main__":
    main()
