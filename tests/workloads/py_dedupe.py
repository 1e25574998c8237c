"""py_dedupe: a contact-list cleaner. It reads a CSV export of sign-ups and
keeps the first row of each e-mail address, the way a small data script
would.

usage: py_dedupe.py ROWS [planted|fixed]

planted: the addresses already seen are kept in a list, and each row's is
looked up in it; fixed: in a set. Prints "N unique of M" at the end."""
import csv
import io
import random
import sys


def export_csv(rows):
    """A made-up sign-up export: id, e-mail, plan, score."""
    rng = random.Random(5)
    buf = io.StringIO()
    out = csv.writer(buf)
    out.writerow(["id", "email", "plan", "score"])
    for i in range(rows):
        out.writerow([i, "user%d@example.com" % rng.randint(1, rows // 3),
                      rng.choice(("free", "pro", "team")), "%.3f" % rng.random()])
    buf.seek(0)
    return buf


class Deduper:
    def __init__(self, use_set):
        self.seen = set() if use_set else []

    def remember(self, email):
        if isinstance(self.seen, set):
            self.seen.add(email)
        else:
            self.seen.append(email)

    def unique(self, reader):
        kept = []
        for row in reader:
            email = row["email"].strip().lower()
            if email not in self.seen:
                self.remember(email)
                kept.append(row)
        return kept


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
    fixed = len(sys.argv) > 2 and sys.argv[2] == "fixed"
    reader = csv.DictReader(export_csv(rows))
    kept = Deduper(use_set=fixed).unique(reader)
    print("%d unique of %d" % (len(kept), rows))


if __name__ == "__main__":
    main()
