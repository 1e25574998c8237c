"""sonde's asyncio recorder, for CPython 3.8 to 3.13: its entry point.

sitecustomize.py (next to this file) calls install() at start-up when
SONDE_ASYNCIO_DIR is set.  Until the program imports asyncio, the only cost
(past loading the recorder's modules, as sitecustomize imports this one) is
one finder at the front of sys.meta_path that waits for `asyncio`; right
after asyncio's own code has run, the finder takes itself out and the hooks
go in (the same on every version 3.8-3.13).  Each module's docstring holds
its contract:

  _sonde_asyncio_wire.py   the records and their file: the wire format (a
                           contract with src/probes/aio_wire.h), flushes,
                           sonde gone
  _sonde_asyncio_sites.py  code locations (N records): site walks
  _sonde_asyncio_tasks.py  task tracking (T, E): create_task, the loop's
                           iterations, the tasks asyncio reports lost
  _sonde_asyncio_beat.py   the loop's start and stop, its heartbeat (L)
  _sonde_asyncio_waits.py  sleeps in an except (R), Lock and Semaphore
                           waits (W, P)
  _sonde_asyncio_wrap.py   what the wrappers share
  _sonde_pools.py          aiohttp's and httpx's connection pools (W, P),
                           hooked when the program imports them
                           (watch_module: one finder on sys.meta_path while
                           a watched module is not imported yet)

The recorder's modules are loaded with this one, at start-up, not when
asyncio is imported: loading them (compiling them, without a .pyc) then
would lengthen the program's `import asyncio`, which sonde's samples would
show under this file's frames.

At exit, every task tracked gets its E record but those still pending, and
the records are flushed; a fork child starts afresh, with its own file.

Cost: nothing until asyncio is imported; then per task a T record (its
values on a list: a flush formats many records with one format), a site
walk (but for a task made from the same asyncio frame as the last one), a
weak reference, a look at each loop iteration while it is young, and its E
record (see _sonde_asyncio_tasks.py).  Per semaphore made, a site walk.
Per loop iteration one look; per acquire that waits, a coroutine, a site
walk and a W record; per run_forever a heartbeat timer and a flush.  On the
2-core VM this was tuned on, about 1.5 to 2.5 us of CPU per task that ends
young (3.11-3.13; more on 3.8): about half the done callback's version.

Nothing here may raise into the program or change what it prints.
"""

import os
import sys
import time

import _sonde_asyncio_beat as _beat
import _sonde_asyncio_sites as _sites
import _sonde_asyncio_tasks as _tasks
import _sonde_asyncio_waits as _waits
import _sonde_asyncio_wire as _wire
import _sonde_asyncio_wrap as _wrap

_installed = False
_patched = False
_finder = None
_watched = {}        # module name -> its patch (see watch_module)
_on = False          # _sonde_asyncio_wire's, copied (see share_on)
_wire.share_on(globals())


def _patch():
    global _patched
    if _patched:
        return
    _patched = True
    import asyncio
    import asyncio.base_events
    import asyncio.coroutines
    import asyncio.events
    import asyncio.locks
    import asyncio.selector_events
    import asyncio.tasks
    import atexit
    inspect = sys.modules.get("inspect")
    is_coroutine = getattr(asyncio.coroutines, "_is_coroutine", None)

    _sites.start((getattr(asyncio, "__file__", None),
                  asyncio.tasks.sleep.__code__.co_filename),
                 (sys.modules[__name__], _wire, _sites, _tasks, _beat, _waits,
                  _wrap))
    _tasks.start(asyncio)
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork_child)

    _tasks.patch(asyncio)
    _beat.patch(asyncio)
    _waits.patch(asyncio, is_coroutine, inspect)
    try:
        import _sonde_pools
        _sonde_pools.install()
    except Exception:
        pass


def _patch_quietly():
    try:
        _patch()
    except Exception:
        pass


def _at_exit():
    try:
        if _on and _wire.in_own_process():
            _tasks.sweep(True)
    except Exception:
        pass
    try:
        _wire.flush(True)
    except Exception:
        pass


def _after_fork_child():
    _sites.after_fork_child()
    _tasks.after_fork_child()
    _wire.after_fork_child()


def _remove_finder():
    try:
        sys.meta_path.remove(_finder)
    except ValueError:
        pass


def watch_module(name, patch):
    """Calls patch() once the module `name` is imported: now when it is, else
    right after its code has run (the finder below, first on sys.meta_path
    while any module is awaited)."""
    global _finder
    if name in sys.modules:
        patch()
        return
    _watched[name] = patch
    if _finder is None:
        _finder = _ModuleFinder()
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


class _ModuleFinder(object):
    """Waits, first on sys.meta_path, for the import of a module of _watched
    (asyncio, then the HTTP clients' pools): it asks the finders after it for
    the module's spec, as the import system would, and has the spec's loader
    call the module's patch right after the module's code ran.  It leaves
    sys.meta_path when no module is awaited."""

    def find_spec(self, name, path=None, target=None):
        if name not in _watched:
            return None
        finders = list(sys.meta_path)
        try:
            finders = finders[finders.index(self) + 1:]
        except ValueError:
            return None
        spec = None
        for finder in finders:
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                return None         # a legacy finder: let the import system
            spec = find_spec(name, path, target)
            if spec is not None:
                break
        if spec is None:
            return None
        loader = spec.loader
        if loader is None or isinstance(loader, type):
            return spec
        try:
            original = loader.exec_module
        except AttributeError:
            return spec

        def exec_module(module):
            try:
                del loader.exec_module
            except AttributeError:
                pass
            patch = _watched.pop(name, None)
            if not _watched:
                _remove_finder()
            original(module)
            if patch is not None:
                patch()

        try:
            loader.exec_module = exec_module
        except Exception:
            pass
        return spec


def install():
    """Starts recording when SONDE_ASYNCIO_DIR is set: patches asyncio now if
    it is imported already, else when it is."""
    global _installed
    if _installed:
        return
    where = os.environ.get("SONDE_ASYNCIO_DIR")
    if not where:
        return
    _installed = True
    _wire.start(os.path.abspath(where), os.getpid(), time.monotonic_ns())
    watch_module("asyncio", _patch_quietly)
