"""The asyncio recorder's heartbeat (L records), part of the recorder
(_sonde_asyncio.py): a running loop's lag, and the work done between its
iterations.

patch() wraps asyncio.events._set_running_loop, which run_forever calls as
the loop starts and again in its `finally`: as the loop starts, its
heartbeat starts, a timer every _BEAT_S (50 ms) on the loop; on the way out
the heartbeat stops, the thread's young tasks get their final look and the
records are flushed.  No frame of the recorder stays on the stack while the
loop runs (KeyboardInterrupt tracebacks, traceback.print_stack() in a
callback read as without the agent).

Each beat: an L record when it ran _LAG_NS (20 ms) or more late, the task
tracker's beat_look(), and a flush when one is due (the flush looks whether
sonde is still there).  Once recording stopped (sonde gone, the file
refused) the beats stop.  Per run_forever: one timer and a flush.
"""

import time

import _sonde_asyncio_tasks as _tasks
import _sonde_asyncio_wire as _wire
from _sonde_asyncio_wrap import dress as _dress

_monotonic_ns = time.monotonic_ns

_LAG_NS = 20000000             # heartbeat lateness worth an L record
_BEAT_S = 0.05                 # heartbeat period
_BEAT_NS = 50000000

_on = False                    # _wire's, copied (see share_on)
_wire.share_on(globals())
_orig_set_running_loop = None


def _beat(loop, box, due):
    if not _on:
        box[0] = None       # sonde is gone (or the file refused): no more beats
        return
    now = _monotonic_ns()
    try:
        if _on:
            st = _tasks.thread_state()
            late = now - due
            if late >= _LAG_NS:
                _wire.append("L\t%d\t%d\t%d\n" % (st.tid, now, late))
            _tasks.beat_look(st, loop)
            if _wire.flush_due(now):
                _wire.flush()
    except Exception:
        pass
    try:
        box[0] = loop.call_later(_BEAT_S, _beat, loop, box,
                                 _monotonic_ns() + _BEAT_NS)
    except Exception:
        box[0] = None


def _loop_started(loop):
    st = _tasks.thread_state()
    old = st.box
    if old is not None and old[0] is not None:
        old[0].cancel()
    box = [None]
    st.box = box
    box[0] = loop.call_later(_BEAT_S, _beat, loop, box,
                             _monotonic_ns() + _BEAT_NS)


def _loop_stopped():
    st = _tasks.thread_state()
    box = st.box
    st.box = None
    if box is not None and box[0] is not None:
        box[0].cancel()
        box[0] = None
    _tasks.look(st, None, True)
    _wire.flush()


def _set_running_loop(loop):
    _orig_set_running_loop(loop)
    if _on:
        try:
            if _wire.in_own_process():
                if loop is None:
                    _loop_stopped()
                elif hasattr(loop, "call_later"):
                    _loop_started(loop)
        except Exception:
            pass


def patch(asyncio):
    """Wraps asyncio.events._set_running_loop (asyncio.events imported)."""
    global _orig_set_running_loop
    events = asyncio.events
    _orig_set_running_loop = events._set_running_loop
    events._set_running_loop = _dress(_set_running_loop,
                                      _orig_set_running_loop)
