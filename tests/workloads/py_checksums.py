"""Backup manifest: records a SHA-256 checksum for every file of a directory
tree, the way many maintenance scripts do it, by running `sha256sum` on each
file. With --batched it runs `sha256sum` once per 200 files instead.

usage: py_checksums.py [--batched] DIR [FILES] (default: the first 400 files)
"""
import os
import subprocess
import sys


def tree_files(root, limit):
    found = []
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(base, name)
            if os.path.isfile(path) and not os.path.islink(path):
                found.append(path)
                if len(found) == limit:
                    return found
    return found


class Manifest:
    def __init__(self):
        self.entries = {}

    def add_one(self, path):
        out = subprocess.run(["sha256sum", path], capture_output=True, text=True,
                             check=True).stdout
        self.entries[path] = out.split()[0]

    def add_many(self, paths):
        out = subprocess.run(["sha256sum", "--"] + paths, capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            digest, path = line.split(None, 1)
            self.entries[path.lstrip("*")] = digest


def main():
    args = sys.argv[1:]
    batched = "--batched" in args
    args = [a for a in args if a != "--batched"]
    root = args[0]
    limit = int(args[1]) if len(args) > 1 else 400
    files = tree_files(root, limit)
    m = Manifest()
    if batched:
        for i in range(0, len(files), 200):
            m.add_many(files[i:i + 200])
    else:
        for path in files:
            m.add_one(path)
    print(len(m.entries), "files")


if __name__ == "__main__":
    main()
