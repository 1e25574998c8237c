"""sonde: name regions of a Python program for sonde's report.

    import sonde

    with sonde.region("load"):
        data = load()

    @sonde.region("train")
    def train(data):
        ...

A region is a push/pop range on the calling thread, nested like NVTX's
(torch.cuda.nvtx.range_push/range_pop, the nvtx package) and recorded
exactly as those are. Under `sonde run`, a top-level region becomes a phase
of the report (docs/regions.md): its wall time, CPU time and the functions
its thread spent it in.

How: `sonde run` points NVTX_INJECTION64_PATH at its agent for the command.
At import this module reads that variable; when it is set and names
sonde's agent, it loads it with ctypes and calls its sonde_region_push and
sonde_region_pop. Otherwise (not under sonde, or another tool's library)
`region` does nothing: the decorator returns the function itself, and the
context manager's enter and exit are empty methods.

No dependency; Python 3.8 and later. Install by copying this directory
next to your code, or with PYTHONPATH=/path/to/sonde/python.
"""
import functools
import os

__all__ = ["region", "active"]


def _load():
    path = os.environ.get("NVTX_INJECTION64_PATH")
    if not path:
        return None, None
    try:
        import ctypes

        lib = ctypes.CDLL(path)
        push, pop = lib.sonde_region_push, lib.sonde_region_pop
    except (OSError, AttributeError):
        return None, None
    push.argtypes = [ctypes.c_char_p]
    push.restype = ctypes.c_int
    pop.argtypes = []
    pop.restype = ctypes.c_int
    return push, pop


_push, _pop = _load()

#: True when regions are recorded (the program runs under `sonde run`).
active = _push is not None


class _Region(object):
    """What region() returns: a context manager and a decorator."""

    __slots__ = ("name", "_text")

    def __init__(self, name):
        self.name = name
        self._text = str(name).encode("utf-8", "replace")

    def __enter__(self):
        _push(self._text)
        return self

    def __exit__(self, *exc):
        _pop()
        return False

    def __call__(self, fn):
        text = self._text
        if _iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                _push(text)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    _pop()

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            _push(text)
            try:
                return fn(*args, **kwargs)
            finally:
                _pop()

        return wrapper


class _NoRegion(object):
    """region() without sonde: nothing to record."""

    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


_NO_REGION = _NoRegion()


def _iscoroutinefunction(fn):
    import inspect

    return inspect.iscoroutinefunction(fn)


def region(name):
    """A region called name (its first 255 bytes in UTF-8 are kept), as
    `with sonde.region(name):` or `@sonde.region(name)`. An async function
    decorated is one region from its first step to its return."""
    return _Region(name) if active else _NO_REGION
