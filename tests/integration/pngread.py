"""A small PNG reader for the tests that look at screenshots: 8-bit RGB or
RGBA, not interlaced (what Chromium and Firefox write), its rows unfiltered.
saturated_share() says how much of an image is strongly coloured (a flame
graph's reds, oranges and greens), against text and page background, which
are grey."""
import struct
import zlib


def read_png(raw):
    """(width, height, channels, rows as bytes) of a PNG."""
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    i, idat, head = 8, b"", None
    while i < len(raw):
        n, kind = struct.unpack(">I4s", raw[i:i + 8])
        body = raw[i + 8:i + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        i += 12 + n
    w, h, depth, colour, _, _, interlace = head
    assert depth == 8 and colour in (2, 6) and not interlace, head
    ch = 3 if colour == 2 else 4
    data, stride, rows, prev = zlib.decompress(idat), w * ch, [], bytearray(w * ch)
    for y in range(h):
        f, line = data[y * (stride + 1)], bytearray(data[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, ch, rows


def _coloured(row, x, ch):
    """Whether pixel x of row is colour, not grey: channels more than 100 apart."""
    r, g, b = row[x * ch], row[x * ch + 1], row[x * ch + 2]
    return max(r, g, b) - min(r, g, b) > 100


def saturated_share(raw, step=4):
    """The share of pixels (one in step along each axis) that are colour,
    not grey."""
    w, h, ch, rows = read_png(raw)
    n = hit = 0
    for y in range(0, h, step):
        row = rows[y]
        for x in range(0, w, step):
            n += 1
            hit += _coloured(row, x, ch)
    return hit / n if n else 0.0


def coloured_rows_share(raw, step=4):
    """The share of rows (one in step) with a coloured pixel (one in step
    along the row): a flame graph's frames colour most rows of its height
    however narrow they are, where the page around it colours a few."""
    w, h, ch, rows = read_png(raw)
    ys = range(0, h, step)
    hit = sum(any(_coloured(rows[y], x, ch) for x in range(0, w, step)) for y in ys)
    return hit / len(ys) if ys else 0.0
