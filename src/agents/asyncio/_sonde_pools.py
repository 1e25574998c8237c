"""sonde's connection-pool hooks, part of the asyncio recorder
(_sonde_asyncio.py; _sonde_asyncio_wire.py holds the wire format).

The recorder calls install() once asyncio is patched; it patches
each client below right after its module is imported (now, when it is).  A
request that has to queue for a connection gets a W record (kind "aiohttp"
or "httpx") naming its connector's P record:

* P's slots: the connector's limit (aiohttp: the smaller of `limit` and
  `limit_per_host` that is set; httpx: `max_connections`; 0 for none), its
  site where the program made it (the first frame outside asyncio and the
  HTTP libraries: `aiohttp.TCPConnector(limit=4)`, `httpx.AsyncClient(...)`,
  or the ClientSession / AsyncClient that made one), and the site that
  called that function.
* W's site: the program's line that made the request; in_flight: the
  connections in use (aiohttp) or open (httpx) as the wait began.

aiohttp 3.x: BaseConnector.connect is replaced by a plain function that,
when the connector has no connection free for the request (the test connect
makes itself before it queues: none available, or others queued already),
returns a coroutine of this file that awaits the original and times it; any
other call returns the original's own coroutine.  The time includes opening
a connection when the one a finished request handed over could not be
reused (with keep-alive, the usual case on a busy pool, it is).

httpcore 0.14-1.x (httpx's pools): wait_for_connection of the request's
status class (RequestStatus, AsyncPoolRequest) is replaced likewise: when
the request has no connection yet, a coroutine of this file times the
original; the pool is the caller's `self` (handle_async_request).

Per request that does not queue: one test (aiohttp: the connector's own
_available_connections; httpx: an attribute).  Nothing here may raise into
the program.
"""

import sys
import time

import _sonde_asyncio as agent
import _sonde_asyncio_sites as _sites
import _sonde_asyncio_tasks as _tasks
import _sonde_asyncio_waits as _waits
import _sonde_asyncio_wire as _wire
from _sonde_asyncio_wrap import dress as _dress
from _sonde_asyncio_wrap import strip_own_frame as _strip_own_frame

_getframe = sys._getframe
_monotonic_ns = time.monotonic_ns
_on = False                    # _sonde_asyncio_wire's, copied (see share_on)
_wire.share_on(globals())

_AIOHTTP = "aiohttp.connector"
_HTTPCORE = "httpcore._async.connection_pool"


def _pool_noter(limit_of):
    """For make_init: notes a connector just made, its limit
    (limit_of(connector)) and where the program made it, for the P record of
    its first queued request (as a semaphore's)."""
    def note(pool):
        made, caller = _sites.sites_made_at(_getframe(3))
        pool._sonde_pool = [0, limit_of(pool), made, caller]
    return note


def _waited(kind, t0, site, task, pool, in_flight, status):
    """The W record of a wait that ended now; status (httpx): the request's
    status, which keeps the end for a wait that follows (see _queued)."""
    if status is not None:
        try:
            status._sonde_since = _monotonic_ns()
        except Exception:
            pass
    _waits.note_wait(kind, t0, site, task, pool, in_flight)


def _make_timed(orig):
    """The coroutine function that times a call of orig (a coroutine
    function) that will queue for a connection, named as orig."""
    async def timed(kind, t0, site, task, pool, in_flight, status, args, kwargs):
        try:
            result = await orig(*args, **kwargs)
        except BaseException as e:
            _waited(kind, t0, site, task, pool, in_flight, status)
            _strip_own_frame(e, _getframe())
            raise
        _waited(kind, t0, site, task, pool, in_flight, status)
        return result
    timed.__name__ = orig.__name__
    timed.__qualname__ = orig.__qualname__
    return timed


def _queued(timed, kind, pool, in_flight, caller, args, kwargs, status=None):
    """timed's coroutine for a request about to queue on pool (caller: the
    frame that made the request, where a site walk starts).  An httpx
    request's wait starts when its status was made (the pool's lock is the
    queue's first part) or, when it queues again (httpcore 0.16 wakes every
    queued request when a connection frees, and all but one queue again),
    where its last wait ended: its waits touch, and sum to its time in the
    pool without a connection."""
    t0 = getattr(status, "_sonde_since", None) or _monotonic_ns()
    return timed(kind, t0, _sites.site(caller),
                 _tasks.task_number(_tasks.running_task()),
                 _waits.pool_of(pool), in_flight, status, args, kwargs)


def _dress_coroutine(wrapper, orig):
    """The wrapper of a coroutine function, dressed as it (see _dress)."""
    coroutines = sys.modules.get("asyncio.coroutines")
    return _dress(wrapper, orig, getattr(coroutines, "_is_coroutine", None),
                  sys.modules.get("inspect"))


# --- aiohttp -------------------------------------------------------------

def _aiohttp_limit(conn):
    limits = [n for n in (conn._limit, conn._limit_per_host) if n]
    return min(limits) if limits else 0


def _aiohttp_in_flight(conn, key):
    if conn._limit_per_host and (not conn._limit or conn._limit_per_host < conn._limit):
        return len(conn._acquired_per_host.get(key, ()))
    return len(conn._acquired)


def _make_aiohttp_connect(orig):
    timed = _make_timed(orig)

    def connect(self, req, *args, **kwargs):
        if _on:
            try:
                key = req.connection_key
                if self._available_connections(key) <= 0 or key in self._waiters:
                    return _queued(timed, "aiohttp", self,
                                   _aiohttp_in_flight(self, key), _getframe(1),
                                   (self, req) + args, kwargs)
            except Exception:
                pass
        return orig(self, req, *args, **kwargs)
    return _dress_coroutine(connect, orig)


def _patch_aiohttp():
    try:
        cls = sys.modules[_AIOHTTP].BaseConnector
        connect, init = cls.connect, cls.__init__
        cls.connect = _make_aiohttp_connect(connect)
        cls.__init__ = _waits.make_init(init, _pool_noter(_aiohttp_limit))
    except Exception:
        pass


# --- httpcore (httpx) ----------------------------------------------------

def _httpcore_limit(pool):
    n = pool._max_connections
    return n if 0 < n < sys.maxsize else 0


def _httpcore_in_flight(pool):
    conns = getattr(pool, "_connections", None)
    if conns is None:
        conns = getattr(pool, "_pool", ())
    return len(conns)


def _make_httpcore_wait(orig):
    timed = _make_timed(orig)

    def wait_for_connection(self, *args, **kwargs):
        if _on:
            try:
                if getattr(self, "connection", True) is None:
                    caller = _getframe(1)
                    pool = caller.f_locals.get("self")
                    if hasattr(pool, "_sonde_pool"):
                        return _queued(timed, "httpx", pool,
                                       _httpcore_in_flight(pool), caller,
                                       (self,) + args, kwargs, self)
            except Exception:
                pass
        return orig(self, *args, **kwargs)
    return _dress_coroutine(wait_for_connection, orig)


def _note_since(status):
    """A request status just made: when the request came to the pool (see
    _queued)."""
    status._sonde_since = _monotonic_ns()


def _patch_httpcore():
    try:
        module = sys.modules[_HTTPCORE]
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != _HTTPCORE:
                continue
            wait = cls.__dict__.get("wait_for_connection")
            if wait is not None:
                cls.wait_for_connection = _make_httpcore_wait(wait)
                cls.__init__ = _waits.make_init(cls.__init__, _note_since)
        pool = module.AsyncConnectionPool
        pool.__init__ = _waits.make_init(pool.__init__, _pool_noter(_httpcore_limit))
    except Exception:
        pass


def install():
    agent.watch_module(_AIOHTTP, _patch_aiohttp)
    agent.watch_module(_HTTPCORE, _patch_httpcore)
