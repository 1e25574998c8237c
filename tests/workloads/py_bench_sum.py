"""Sums squares two ways for sonde bench's test: 'loop' adds one element per
Python bytecode iteration, 'batched' hands the whole range to map/sum in C.
The batched way is several times faster; both print the same sum."""
import operator
import sys

N = 1_000_000

if sys.argv[1] == "loop":
    total = 0
    for i in range(N):
        total += i * i
else:
    r = range(N)
    total = sum(map(operator.mul, r, r))
print(total)
