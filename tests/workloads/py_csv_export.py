"""Nightly export: writes the day's orders as CSV on stdout, for the loader
that reads it from a pipe (`py_csv_export.py ROWS | loader`).

Each order is printed as it is formatted, one print() per row. Run as many
container images run Python (PYTHONUNBUFFERED=1, or python -u), sys.stdout
has no buffer and every piece print() writes is a write(2) of its own.

usage: py_csv_export.py [ROWS] (default 120000)
"""
import random
import sys
from dataclasses import dataclass

STATUSES = ("new", "paid", "shipped", "returned")


@dataclass
class Order:
    order_id: int
    customer: str
    amount: float
    status: str


class OrderStore:
    """Stands in for the database the export reads."""

    def __init__(self, seed=7):
        self.rng = random.Random(seed)

    def orders_of_day(self, n):
        rng = self.rng
        return [Order(i, "c%05d" % rng.randrange(50000), rng.uniform(1, 500),
                      rng.choice(STATUSES)) for i in range(n)]


class CsvExporter:
    def __init__(self, out):
        self.out = out

    def write(self, orders):
        print("order_id", "customer", "amount", "status", sep=",", file=self.out)
        for o in orders:
            print(o.order_id, o.customer, "%.2f" % o.amount, o.status, sep=",", file=self.out)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 120000
    orders = OrderStore().orders_of_day(n)
    CsvExporter(sys.stdout).write(orders)


if __name__ == "__main__":
    main()
