"""A small reader of Perfetto's native trace (protos/perfetto/trace: a Trace
is repeated TracePacket, field 1), written for the tests so that what sonde
writes is checked against the format's rules, not trusted. read_perfetto()
decodes the packets by hand and asserts what trace_processor relies on:
every packet is on one trusted sequence whose first packet clears its
incremental state; a packet that uses interned names says it needs that
state, and every iid it uses was defined in it or before; track uuids are
unique and nonzero, a parent is described before its children, an event's
track before the event; on each track the slices begin and end in time
order and nest."""
import collections
import struct

from pprof_reader import fields, packed

SLICE_BEGIN, SLICE_END, COUNTER = 1, 2, 4


def one(f, n, default=None):
    v = f.get(n)
    assert not v or len(v) == 1, f"field {n} repeated: {v}"
    return v[0] if v else default


def text(b):
    return b.decode("utf-8") if b is not None else None


def fixed64s(values):
    return [struct.unpack("<Q", v)[0] for v in values]


def read_perfetto(raw):
    """{"tracks": {uuid: {"kind", "pid", "tid", "name", "parent"}},
    "slices": [(uuid, name, category, begin_ns, end_ns, flow_ids, terminating_ids)],
    "counters": [(uuid, ts_ns, value)]}."""
    top = fields(raw)
    assert set(top) <= {1}, f"top-level fields other than packets: {sorted(top)}"
    tracks, slices, counters = {}, [], []
    names, cats = {}, {}
    open_ = collections.defaultdict(list)  # uuid -> [(begin, name, cat, flows, terms)]
    last_ts = collections.defaultdict(int)
    seq = None
    for n, buf in enumerate(top.get(1, [])):
        assert isinstance(buf, bytes), "a packet that is not length-delimited"
        p = fields(buf)
        sid = one(p, 10)
        assert sid, f"packet {n} has no trusted_packet_sequence_id"
        assert seq in (None, sid), f"packet {n} on sequence {sid}, the trace's is {seq}"
        seq = sid
        flags = one(p, 13, 0)
        if n == 0:
            assert flags & 1, "the first packet does not clear the incremental state"
        if 12 in p:
            interned = fields(one(p, 12))
            for field, table in ((1, cats), (2, names)):
                for e in interned.get(field, []):
                    e = fields(e)
                    iid, s = one(e, 1), text(one(e, 2))
                    assert iid and s is not None, f"interned entry {e}"
                    assert table.get(iid, s) == s, f"iid {iid} redefined as {s!r}"
                    table[iid] = s
        if 60 in p:
            d = fields(one(p, 60))
            uuid = one(d, 1)
            assert uuid, f"packet {n}: a track without a uuid"
            t = {"kind": "track", "name": text(one(d, 2)), "parent": one(d, 5),
                 "pid": None, "tid": None}
            if 3 in d:
                proc = fields(one(d, 3))
                t.update(kind="process", pid=one(proc, 1), name=text(one(proc, 6)))
                assert t["pid"] is not None, "a process without a pid"
            elif 4 in d:
                th = fields(one(d, 4))
                t.update(kind="thread", pid=one(th, 1), tid=one(th, 2), name=text(one(th, 5)))
                assert t["pid"] is not None and t["tid"], "a thread without pid and tid"
            elif 8 in d:
                t["kind"] = "counter"
            if t["parent"] is not None:
                assert t["parent"] in tracks, f"track {uuid}'s parent {t['parent']} comes later"
            old = tracks.get(uuid)
            if old:  # described again (named later): the same kind of track
                assert old["kind"] == t["kind"] and old["pid"] == t["pid"], (old, t)
                t["name"] = t["name"] or old["name"]
            tracks[uuid] = t
        if 11 in p:
            e = fields(one(p, 11))
            ts = one(p, 8)
            assert ts is not None, f"packet {n}: an event without a timestamp"
            uuid, kind = one(e, 11), one(e, 9)
            assert uuid in tracks, f"packet {n}: an event on undescribed track {uuid}"
            assert ts >= last_ts[uuid], f"track {uuid} goes back in time at packet {n}"
            last_ts[uuid] = ts
            if kind == COUNTER:
                assert tracks[uuid]["kind"] == "counter", tracks[uuid]
                v = one(e, 44)
                assert v is not None, "a counter event without double_counter_value"
                counters.append((uuid, ts, struct.unpack("<d", v)[0]))
            elif kind == SLICE_BEGIN:
                assert flags & 2, f"packet {n} uses interned names without saying so"
                iid, cat_iids = one(e, 10), packed(e.get(3, []))
                assert iid in names, f"packet {n}: name iid {iid} was never defined"
                assert all(c in cats for c in cat_iids), f"packet {n}: category {cat_iids}"
                open_[uuid].append((ts, names[iid], ",".join(cats[c] for c in cat_iids),
                                    fixed64s(e.get(47, [])), fixed64s(e.get(48, []))))
            elif kind == SLICE_END:
                assert open_[uuid], f"packet {n}: a slice ends on track {uuid} with none open"
                begin, name, cat, flows, terms = open_[uuid].pop()
                slices.append((uuid, name, cat, begin, ts, flows, terms))
            else:
                raise AssertionError(f"packet {n}: event type {kind}")
    assert not any(open_.values()), "slices left open at the end"
    return {"tracks": tracks, "slices": slices, "counters": counters}
