"""Encodes a buffer of samples two ways for sonde bench's test: 'loop' goes
one sample per Python iteration (the per-sample loop a profile finds),
'batched' hands the whole buffer to one C call (bytes.translate). The
batched way is tens of times faster on the work itself, and the buffer is
made in C, so the work is most of what the loop's run costs (a run of each
differs several times over, however busy the machine); both print the same
checksum."""
import sys

DATA = bytes(range(256)) * 12_000  # 3 072 000 samples
TABLE = bytes(x ^ 0x5A for x in range(256))

if sys.argv[1] == "loop":
    out = bytearray()
    for x in DATA:
        out.append(TABLE[x])
else:
    out = DATA.translate(TABLE)
print(sum(out[::4096]))
