"""py_one_line: two Python lines that each allocate through several native
paths: a comprehension of bytearrays (the objects, their buffers, the list's
growth) and json.loads of a large document (dicts, lists, strings, floats).
Both are held at the peak; each line must be one heap site."""
import json
import sys


def build_buffers(n):
    return [bytearray(1000) for _ in range(n)]  # several native callees, one line


def parse_document(rows):
    text = json.dumps([{"id": i, "name": "row %d" % i, "score": i * 0.5} for i in range(rows)])
    return json.loads(text)  # several native callees, one line


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40000
    buffers = build_buffers(n)
    doc = parse_document(n // 2)
    print("buffers", len(buffers), "rows", len(doc))


if __name__ == "__main__":
    main()
