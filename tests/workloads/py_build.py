"""py_build: one function builds a large table (~150 MB of bytes objects) while
others do small work; the allocation tracker's peak site must name build_table."""
import sys


def small_work(n):
    # Short-lived small objects: temporaries, no peak.
    total = 0
    for i in range(n):
        total += len(str(i) * 3)
    return total


def build_table(rows, size):
    table = []
    for i in range(rows):
        table.append(bytes(size))  # the peak: rows * size bytes held at once
    return table


def summarize(table):
    return sum(len(row) for row in table)


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 150000
    small_work(20000)
    table = build_table(rows, 1000)
    small_work(20000)
    print("rows", len(table), "bytes", summarize(table))
    del table
    small_work(5000)


if __name__ == "__main__":
    main()
