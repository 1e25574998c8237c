"""The asyncio recorder's code locations (N records), part of the recorder
(_sonde_asyncio.py): where a task, a wait or a semaphore was made.

site(frame) is the location id of the first "user" frame from frame
outwards: a site walk goes past the frames of asyncio, of this recorder, of
the plumbing between user code and asyncio (contextlib, functools,
threading, concurrent.futures), of the HTTP clients whose pools are hooked
and of comprehensions.  coro_loc(coro) is the id of a coroutine's
definition.  Each location's N line goes into the buffer before its id is
published, so a record that uses the id always comes after it in the file.

Code objects are keyed by id(code) (hashing one hashes its constants every
time) and kept, so an id is not reused while its key is in use; at most
_LOCS_MAX of them (more: new ids for the same places).  A call site is found
again by its f_lasti, without working out its line; two calls on one line
share an id.  On 3.12+ the frames a walk goes past are passed by their
module's name (sys._getframemodulename), without a frame object made for
each.

start() must have been called (asyncio imported) before the first walk.
Thread-safe: location ids are given under a lock.
"""

import itertools
import os
import sys
import _thread

import _sonde_asyncio_wire as _wire

_getframe = sys._getframe
# 3.12+: a frame's module name without making a frame object for it
getframemodulename = getattr(sys, "_getframemodulename", None)

_LOCS_MAX = 200000             # code objects remembered (more: new ids)
_SKIP_MAX = 20000              # file names classified and remembered
_QUALNAME = sys.version_info >= (3, 11)
# A comprehension's frame is not a site: its function is (3.12 inlines list,
# set and dict comprehensions, so the same code reads the same on every
# version).
_COMPREHENSIONS = frozenset(("<listcomp>", "<setcomp>", "<dictcomp>",
                             "<genexpr>"))
# HTTP clients and what they run on, whose frames a site walk goes past like
# asyncio's: a request's wait and a connector's making are the program's call.
_POOL_LIBRARIES = frozenset(("aiohttp", "httpx", "httpcore", "anyio", "h11"))
_POOL_LIBRARY_DIRS = tuple("/%s/" % lib for lib in sorted(_POOL_LIBRARIES))

# id(code) -> False for a frame a site walk goes past (asyncio's, a
# comprehension's...), else a dict: f_lasti -> location id, and -1 - line ->
# location id (lines seen, so that two calls on one line share an id).
sites = {}
coros = {}           # id(code) -> location id of the coroutine's definition
_codes = []          # the code objects keyed
# The last site of a create_task call whose caller and the caller's caller
# are both frames a walk goes past (gather's ensure_future calls...), in one
# slot: (that second frame, the caller's code (3.12+: its module's name),
# the site).  The frame, held until the task tracker's next look (which
# empties the slot), is the key: while it runs, the frames above it do not
# change.
NO_SITE = (None, None, 0)
last_site = [NO_SITE]
_loc_ids = itertools.count(1)
_lock = _thread.allocate_lock()
_skip_files = {}     # co_filename -> True when frames of it are not "user"
skip_modules = {}    # module name -> True likewise (see skip_module)
_asyncio_prefixes = ()
own_files = frozenset()      # the recorder's files (see start)
_own_modules = frozenset()   # and their modules' names


def start(asyncio_files, agent_modules):
    """asyncio_files: asyncio's files (the directories of those given are
    its); agent_modules: the recorder's modules, whose frames a walk goes
    past too."""
    global _asyncio_prefixes, own_files, _own_modules
    prefixes = set()
    for where in asyncio_files:
        if where:
            prefixes.add(os.path.dirname(where) + os.sep)
    prefixes.add("<frozen asyncio")
    _asyncio_prefixes = tuple(sorted(prefixes))
    own_files = frozenset(m.__file__ for m in agent_modules)
    _own_modules = frozenset(m.__name__ for m in agent_modules)


def _classify(filename):
    """True when frames of this file are asyncio's, this agent's, or the
    plumbing between user code and asyncio (contextlib, functools, threading,
    concurrent.futures), which a site walk goes past."""
    skip = False
    if filename in own_files:
        skip = True
    elif filename.startswith(_asyncio_prefixes):
        skip = True
    else:
        base = filename.rpartition("/")[2]
        if base in ("contextlib.py", "functools.py", "threading.py"):
            skip = True
        elif "/concurrent/futures/" in filename:
            skip = True
        elif any(lib in filename for lib in _POOL_LIBRARY_DIRS):
            skip = True
    if len(_skip_files) < _SKIP_MAX:
        _skip_files[filename] = skip
    return skip


def _code_sites(code):
    """sites' entry for a code object not seen yet: False when a site walk
    goes past its frames, else its (empty) dict of sites; remembered while
    fewer than _LOCS_MAX code objects are."""
    filename = code.co_filename
    skip = _skip_files.get(filename)
    if skip is None:
        skip = _classify(filename)
    entry = False if skip or code.co_name in _COMPREHENSIONS else {}
    with _lock:
        known = sites.get(id(code))
        if known is not None:
            return known
        if len(_codes) < _LOCS_MAX:
            sites[id(code)] = entry
            _codes.append(code)
    return entry


def _method_name(code, frame):
    """Before 3.11 (no co_qualname): co_name, with `Class.` in front when the
    frame has a local `self`, or a local `cls` that is a class."""
    name = code.co_name
    if frame is None:
        return name
    names = code.co_varnames + code.co_cellvars
    try:
        if "self" in names or "cls" in names:
            local = frame.f_locals
            if "self" in local:
                return type(local["self"]).__name__ + "." + name
            cls = local.get("cls")
            if cls is not None and issubclass(type(cls), type):
                return cls.__name__ + "." + name
    except Exception:
        pass
    return name


def _new_loc(code, line, frame, coro, lines=None, lasti=None):
    """The id of a location not seen yet: a call site (line; its frame; lines
    the code's dict of sites, given the call's f_lasti too) or the definition
    of the coroutine coro (line None).  Its N line goes into the buffer
    before the id is published, so a record that uses the id always comes
    after it in the file."""
    if _QUALNAME:
        name = code.co_qualname
    elif coro is not None:
        name = getattr(coro, "__qualname__", None) or code.co_name
    else:
        name = _method_name(code, frame)
    where = code.co_firstlineno if line is None else line
    text = "%s\t%s\t%d\n" % (_wire.clean(name), _wire.clean(code.co_filename),
                             where or 0)
    key = id(code)
    with _lock:
        if line is None:
            n = coros.get(key)
        else:
            n = lines.get(-1 - line)
        if n is None:
            n = next(_loc_ids)
            _wire.nappend("N\t%d\t%s" % (n, text))
            if line is None:
                if len(_codes) < _LOCS_MAX:
                    coros[key] = n
                    _codes.append(code)
            else:
                lines[-1 - line] = n
        if lasti is not None:
            lines[lasti] = n
    return n


def coro_loc(coro):
    """The location id of the definition of coro (a coroutine whose code's
    id is not in coros yet)."""
    return _new_loc(coro.cr_code, None, None, coro)


def skip_module(name):
    """True when a walk goes past the frames of functions of this module (by
    name, as sys._getframemodulename() gives it: asyncio's, this agent's, the
    plumbing's of _classify)."""
    skip = skip_modules.get(name)
    if skip is None:
        skip = bool(name) and (
            name == "asyncio"
            or name.startswith(("asyncio.", "concurrent.futures"))
            or name.partition(".")[0] in _POOL_LIBRARIES
            or name in ("contextlib", "functools", "threading")
            or name in _own_modules)
        if len(skip_modules) < _SKIP_MAX:
            skip_modules[name] = skip
    return skip


def site_from(depth, back=None, key=None):
    """site() of the frame depth up from the caller (1: the caller's
    caller).  3.12+: the frames of asyncio's modules and the like are passed
    by their module's name, without a frame object made for each."""
    depth += 1
    passed = 0
    if getframemodulename is not None:
        name = getframemodulename(depth)
        while skip_modules.get(name) or (
                name not in skip_modules and skip_module(name)):
            depth += 1
            passed += 1
            name = getframemodulename(depth)
    try:
        f = _getframe(depth)
    except ValueError:
        return 0
    return site(f, back, key, passed)


def site(f, back=None, key=None, passed=0, _id=id, _get=sites.get,
         _last=last_site):
    """Location id of the first user frame from f outwards (not asyncio's,
    not a comprehension's...), or 0.  The call's f_lasti finds a site seen
    before, without working out its line.  back, key: for create_task's
    caller, its f_back and last_site's key; passed: frames passed already
    (see site_from).  (The defaults after them are bound once: cheaper than
    global names before 3.11.)"""
    while f is not None:
        code = f.f_code
        lines = _get(_id(code))
        if lines is None:
            lines = _code_sites(code)
        if lines is not False:
            lasti = f.f_lasti
            n = lines.get(lasti)
            if n is None:
                n = _new_loc(code, f.f_lineno or 0, f, None, lines, lasti)
            if passed >= 2 and back is not None:
                _last[0] = (back, key, n)
            return n
        passed += 1
        f = f.f_back
    return 0


def sites_made_at(f):
    """For a semaphore made in frame f: the site of the first user frame
    from f outwards, and of the first user frame that called that one (0:
    none): a pool class's __init__ makes the semaphore, its caller picks the
    size."""
    while f is not None:
        entry = sites.get(id(f.f_code))
        if entry is None:
            entry = _code_sites(f.f_code)
        if entry is not False:
            return site(f), site(f.f_back) if f.f_back is not None else 0
        f = f.f_back
    return 0, 0


def after_fork_child():
    """A fork child numbers its own locations from 1."""
    global _loc_ids, _lock
    sites.clear()
    coros.clear()
    del _codes[:]
    _loc_ids = itertools.count(1)
    last_site[0] = NO_SITE
    _lock = _thread.allocate_lock()
