"""The asyncio recorder's waits (R, W and P records), part of the recorder
(_sonde_asyncio.py): retries, and acquires that had to wait.

patch() replaces asyncio.sleep and Lock/Semaphore.acquire by plain functions
that return the original coroutine (a coroutine of this file only for an
acquire that has to wait), marked as coroutine functions for
asyncio.iscoroutinefunction (and inspect's, on 3.12+).  So a sleep or an
acquire that does not wait adds no frame, and sys.exc_info() is read in the
calling coroutine's own frame:

* sleep(delay > 0) while the calling coroutine (or one awaiting it, in its
  task) handles an exception: an R record;
* an acquire that waits (the lock is taken as it is called): a W record
  with its wait, as note_wait() writes for the connection pools too
  (_sonde_pools.py).

Semaphore.__init__ is wrapped to note the semaphore's value (the slots of
the pool it guards) and where it was made, on the semaphore itself
(_sonde_pool: [P number, slots, site, caller's site]); its first wait writes
them as a P record (pool_of()).  Cost: a site walk per semaphore made,
nothing per acquire that does not wait; per acquire that waits, a coroutine
of this file, a site walk and a W record.
"""

import itertools
import sys
import time

import _sonde_asyncio_wire as _wire
from _sonde_asyncio_sites import site as _site, site_from as _site_from
from _sonde_asyncio_sites import sites_made_at as _sites_made_at
from _sonde_asyncio_tasks import running_task as _running_task
from _sonde_asyncio_tasks import task_number as _task_number
from _sonde_asyncio_wire import append as _append, wextend as _wextend
from _sonde_asyncio_wrap import dress as _dress, takes as _takes
from _sonde_asyncio_wrap import strip_own_frame as _strip_own_frame

_monotonic_ns = time.monotonic_ns
_getframe = sys._getframe
_exc_info = sys.exc_info
# Whether an exception is being handled: sys.exception() (3.11+) is None,
# sys.exc_info() is (None, None, None) when not.
_handling = getattr(sys, "exception", _exc_info)
_NOT_HANDLING = None if _handling is not _exc_info else (None, None, None)
# Code flags of frames that run inside a task: coroutine, iterable coroutine
# (types.coroutine), async generator, generator (yield-from chains).
_CO_IN_TASK = 0x20 | 0x80 | 0x100 | 0x200

_on = False                    # _wire's, copied (see share_on)
_wire.share_on(globals())
_pool_ids = itertools.count(1)   # P numbers, given at a semaphore's first wait


def _note_retry(delay, caller):
    t = _monotonic_ns()
    if not isinstance(delay, (int, float)) or not delay > 0:
        return
    exc_type, _, tb = _exc_info()
    if exc_type is None or tb is None:
        return
    # The exception must be handled by the caller or by a coroutine awaiting
    # it, not by code outside the task (an except block around asyncio.run
    # shows through sys.exc_info() too).  A traceback starts at the frame that
    # caught the exception.
    catcher = tb.tb_frame
    f = caller
    while f is not catcher:
        if f is None or not f.f_code.co_flags & _CO_IN_TASK:
            return
        f = f.f_back
    site = _site(caller)
    task = _task_number(_running_task())
    _append("R\t%d\t%d\t%d\t%s\t%s\n" % (
        t, site, int(round(delay * 1e9)), _wire.clean(exc_type.__qualname__),
        task))


def note_wait(kind, t0, site, n, pool, in_flight):
    """The W record of a wait of kind that began at t0 and ended now (site,
    n: the task's id, pool: its P number, in_flight: see the format)."""
    if _on:
        try:
            _wextend((t0, _monotonic_ns() - t0, site, n, kind, pool,
                      in_flight))
        except Exception:
            pass


def pool_of(sem):
    """The P number of a semaphore (or connector) about to be waited on (its
    P record goes out with the first), 0 when it was made before the
    hooks."""
    p = getattr(sem, "_sonde_pool", None)
    if p is None:
        return 0
    if not p[0]:
        p[0] = next(_pool_ids)
        _append("P\t%d\t%d\t%d\t%d\n" % (p[0], p[1], p[2], p[3]))
    return p[0]


def _make_waiting_acquire(orig):
    """The coroutine function that times an acquire that waits, named as
    the original (its coroutines' names come from it: no attribute to set
    on each)."""
    async def acquire(lock, kind, t0, site, n, pool, in_flight):
        try:
            result = await orig(lock)
        except BaseException as e:
            note_wait(kind, t0, site, n, pool, in_flight)
            _strip_own_frame(e, _getframe())
            raise
        note_wait(kind, t0, site, n, pool, in_flight)
        return result
    acquire.__name__ = orig.__name__
    acquire.__qualname__ = orig.__qualname__
    return acquire


def _waiting(timed, lock, kind):
    """For an acquire about to wait (the lock is taken as it is called): a
    coroutine of timed (see _make_waiting_acquire) that times the original's
    wait; else None, and the caller (the acquire wrapper: the frame 2 up
    called it) returns the original's own coroutine."""
    if not _on:
        return None
    try:
        if not lock.locked():
            return None
        t0 = _monotonic_ns()
        if kind == "semaphore":
            pool = pool_of(lock)
            slots = lock._sonde_pool[1] if pool else None
            in_flight = -1 if slots is None else slots - max(lock._value, 0)
        else:
            pool, in_flight = 0, 1
        return timed(lock, kind, t0, _site_from(2),
                     _task_number(_running_task()), pool, in_flight)
    except Exception:
        return None


def _make_sleep(orig):
    if _takes(orig, ("delay", "result"), ()):
        def sleep(delay, result=None):
            if _handling() != _NOT_HANDLING and _on:
                try:
                    _note_retry(delay, _getframe(1))
                except Exception:
                    pass
            try:
                return orig(delay, result)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    elif _takes(orig, ("delay", "result"), ("loop",)):
        def sleep(delay, result=None, *, loop=None):
            if _handling() != _NOT_HANDLING and _on:
                try:
                    _note_retry(delay, _getframe(1))
                except Exception:
                    pass
            try:
                return orig(delay, result, loop=loop)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    else:
        def sleep(*args, **kwargs):
            if _handling() != _NOT_HANDLING and _on:
                try:
                    _note_retry(args[0] if args else kwargs.get("delay"),
                                _getframe(1))
                except Exception:
                    pass
            try:
                return orig(*args, **kwargs)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    return sleep


def _make_acquire(orig, kind):
    """Only an acquire that will wait (the lock is taken when it is called)
    runs through a coroutine of this file; any other is the original's."""
    timed = _make_waiting_acquire(orig)
    if _takes(orig, ("self",), ()):
        def acquire(self):
            if _on:
                co = _waiting(timed, self, kind)
                if co is not None:
                    return co
            return orig(self)
    else:
        def acquire(self, *args, **kwargs):
            if _on and not args and not kwargs:
                co = _waiting(timed, self, kind)
                if co is not None:
                    return co
            try:
                return orig(self, *args, **kwargs)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    return acquire


def make_init(orig, note):
    """A class's __init__ that calls note(self) once the original made it
    (the frame 2 up from note made the object), dressed as the original."""
    def __init__(self, *args, **kwargs):
        try:
            orig(self, *args, **kwargs)
        except BaseException as e:
            _strip_own_frame(e, _getframe())
            raise
        if _on:
            try:
                note(self)
            except Exception:
                pass
    return _dress(__init__, orig)


def _note_semaphore(sem):
    """Semaphore.__init__'s note (BoundedSemaphore's calls it): the
    semaphore's value and where it was made, for the P record of its first
    wait.  A site walk per semaphore made, nothing per acquire."""
    made, caller = _sites_made_at(_getframe(2))
    sem._sonde_pool = [0, sem._value, made, caller]


def patch(asyncio, is_coroutine, inspect):
    """Replaces asyncio.sleep (and tasks.sleep), Lock.acquire,
    Semaphore.acquire and Semaphore.__init__ (asyncio.locks and
    asyncio.tasks imported; is_coroutine, inspect: see
    _sonde_asyncio_wrap.dress)."""
    locks, tasks = asyncio.locks, asyncio.tasks
    orig = tasks.sleep
    wrapped_sleep = _dress(_make_sleep(orig), orig, is_coroutine, inspect)
    tasks.sleep = wrapped_sleep
    if getattr(asyncio, "sleep", None) is orig:
        asyncio.sleep = wrapped_sleep

    orig = locks.Lock.acquire
    locks.Lock.acquire = _dress(_make_acquire(orig, "lock"), orig,
                                is_coroutine, inspect)
    orig = locks.Semaphore.acquire
    locks.Semaphore.acquire = _dress(_make_acquire(orig, "semaphore"), orig,
                                     is_coroutine, inspect)
    locks.Semaphore.__init__ = make_init(locks.Semaphore.__init__,
                                         _note_semaphore)
