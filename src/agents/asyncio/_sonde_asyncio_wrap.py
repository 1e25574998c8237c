"""What every wrapper of the asyncio recorder (_sonde_asyncio.py) shares:
wrappers that read as the originals, and tracebacks as without the agent.

The wrappers are made by functions of their modules so that each has the
original's name in its code (argument errors name the function by it before
3.10).  Those taking the original's exact parameters (takes()) come first:
no *args/**kwargs to pack, they are on hot paths; the others are for a
signature the recorder does not know.  dress() then gives a wrapper the
original's name, doc and signature.

An exception that passes through a wrapper leaves with the wrapper's
traceback entry taken out (strip_own_frame(); 3.11+: on 3.8-3.10 a bare
`raise` keeps it, and such a traceback shows one more entry, of the
recorder: create_task's argument errors, a CancelledError of an acquire that
had to wait, a KeyboardInterrupt raised in an exception handler).
"""


def strip_own_frame(exc, frame):
    """Drops this wrapper's entry from an exception's traceback before a bare
    `raise`, so tracebacks read as without the agent.  Effective on 3.11+,
    where `raise` re-raises with the exception's __traceback__; before, the
    entry stays (the traceback then shows one more frame)."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame is frame:
        exc.__traceback__ = tb.tb_next


def takes(func, positional, keyword_only):
    """True when func's parameters are exactly these names, in order, every
    default None and no *args, **kwargs or positional-only ones: then a
    wrapper with the same parameters can pass them on as they came."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_flags & 0x0C or code.co_posonlyargcount:
        return False
    n, k = code.co_argcount, code.co_kwonlyargcount
    if (n, k) != (len(positional), len(keyword_only)):
        return False
    if code.co_varnames[:n + k] != positional + keyword_only:
        return False
    defaults = func.__defaults__ or ()
    kwdefaults = func.__kwdefaults__ or {}
    return (all(d is None for d in defaults)
            and sorted(kwdefaults) == sorted(keyword_only)
            and all(d is None for d in kwdefaults.values()))


def dress(wrapper, orig, is_coroutine=None, inspect=None):
    """Gives the wrapper the original's name, doc and signature (through
    __wrapped__), and marks a coroutine function's replacement as one
    (is_coroutine: asyncio.coroutines._is_coroutine; inspect: the module,
    when imported, for markcoroutinefunction on 3.12+)."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(orig, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = orig
    if is_coroutine is not None:
        wrapper._is_coroutine = is_coroutine
        mark = getattr(inspect, "markcoroutinefunction", None)
        if mark is not None:
            mark(wrapper)
    return wrapper
