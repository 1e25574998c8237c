"""A small reader of pprof's profile.proto (gzip'd), written for the tests so
that what sonde writes is checked against the format's rules, not trusted:
read_pprof() decodes the protobuf by hand and asserts what a reader relies on
(string_table[0] is "", every string index and id it meets exists, ids are
unique and nonzero, each sample has one value per sample type)."""
import collections
import gzip


def varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i
        assert shift < 70, "varint longer than 10 bytes"


def fields(buf):
    """{field number: [values]}: ints for varints, bytes for length-delimited."""
    out = collections.defaultdict(list)
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wire = key >> 3, key & 7
        assert field > 0, "field number 0"
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v = bytes(buf[i:i + n])
            assert len(v) == n, "a length-delimited field runs past the end"
            i += n
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wire} of field {field}")
        out[field].append(v)
    return out


def packed(values):
    """A repeated integer field, packed (bytes) or not (ints)."""
    out = []
    for v in values:
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = varint(v, i)
                out.append(x)
        else:
            out.append(v)
    return out


def one(f, n, default=0):
    v = f.get(n, [default])
    assert len(v) == 1, f"field {n} repeated"
    return v[0]


def read_pprof(raw):
    """The profile as plain Python values, every rule of profile.proto that a
    reader relies on checked on the way."""
    assert raw[:2] == b"\x1f\x8b", "not gzip"
    top = fields(gzip.decompress(raw))
    strings = [s.decode("utf-8") for s in top[6]]
    assert strings and strings[0] == "", "string_table[0] must be \"\""

    def s(i):
        assert 0 <= i < len(strings), f"string index {i} out of range ({len(strings)})"
        return strings[i]

    def value_type(b):
        f = fields(b)
        return (s(one(f, 1)), s(one(f, 2)))

    mappings, functions, locations = {}, {}, {}
    for b in top[3]:
        f = fields(b)
        mid = one(f, 1)
        assert mid and mid not in mappings, f"mapping id {mid} zero or repeated"
        assert one(f, 7) == 1, "a mapping without has_functions"
        mappings[mid] = s(one(f, 5))
    for b in top[5]:
        f = fields(b)
        fid = one(f, 1)
        assert fid and fid not in functions, f"function id {fid} zero or repeated"
        functions[fid] = (s(one(f, 2)), s(one(f, 4)))
        s(one(f, 3))
    for b in top[4]:
        f = fields(b)
        lid = one(f, 1)
        assert lid and lid not in locations, f"location id {lid} zero or repeated"
        mid = one(f, 2)
        assert mid == 0 or mid in mappings, f"location {lid}: no mapping {mid}"
        lines = [fields(x) for x in f[4]]
        assert lines, f"location {lid} has no line"
        for ln in lines:
            assert one(ln, 1) in functions, f"location {lid}: no function {one(ln, 1)}"
        locations[lid] = (mid, [(functions[one(ln, 1)], one(ln, 2)) for ln in lines])
    sample_types = [value_type(b) for b in top[1]]
    samples = []
    for b in top[2]:
        f = fields(b)
        locs = packed(f[1])
        values = packed(f[2])
        assert locs and all(lid in locations for lid in locs), f"sample refers to {locs}"
        assert len(values) == len(sample_types), (values, sample_types)
        labels = {}
        for lb in f[3]:
            lf = fields(lb)
            num = one(lf, 3)  # int64: a varint of its two's complement
            if num >= 1 << 63:
                num -= 1 << 64
            labels[s(one(lf, 1))] = s(one(lf, 2)) if one(lf, 2) else num
        samples.append((locs, values, labels))
    for c in top[13]:
        s(c)
    return {"strings": strings, "sample_types": sample_types, "samples": samples,
            "locations": locations, "mappings": mappings, "functions": functions,
            "period_type": value_type(one(top, 11, b"")), "period": one(top, 12),
            "time_nanos": one(top, 9), "duration_nanos": one(top, 10),
            "default_sample_type": s(one(top, 14))}
