"""sonde's asyncio recorder, for CPython 3.8 to 3.13.

sitecustomize.py (next to this file) calls install() at start-up when
SONDE_ASYNCIO_DIR is set.  Until the program imports asyncio, the only cost
is one finder at the front of sys.meta_path that waits for `asyncio`; right
after asyncio's own code has run, the finder takes itself out and the hooks
below go in.  The recorder then appends text records to
$SONDE_ASYNCIO_DIR/aio-<pid>.txt, which sonde's C side reads.  The format is
a contract with that C code:

  one record a line, fields separated by one TAB, every line ending in "\\n",
  UTF-8 (unencodable characters replaced); string fields have TAB, CR and LF
  replaced by a space and are cut to 300 characters; times are
  time.monotonic_ns() (CLOCK_MONOTONIC); integers in decimal.

  V 1 <pid> <major.minor.micro>        first line of the file
  N <id> <function> <file> <line>      a code location, before its first use
  T <task> <t_ns> <site> <coro> <tid>  a task was created
  E <task> <t_ns> <state>              it finished: ok, cancelled or the
                                       exception's type __qualname__ (see
                                       "Task ends" below for t_ns, and for
                                       "destroyed")
  L <tid> <t_ns> <late_ns>             a 50 ms heartbeat ran >= 20 ms late
  R <t_ns> <site> <delay_ns> <exc> <task>
                                       asyncio.sleep(delay > 0) while the
                                       calling coroutine handles an exception
  W <t_ns> <wait_ns> <site> <task> <kind> <pool> <in_flight>
                                       a Lock ("lock") or Semaphore /
                                       BoundedSemaphore ("semaphore") acquire
                                       that had to wait, or a request that
                                       queued for a connection of an aiohttp
                                       connector ("aiohttp") or an httpx
                                       (httpcore) pool ("httpx"), see
                                       _sonde_pools.py; pool: the semaphore's
                                       or connector's P number (0: a lock, or
                                       one made before the hooks); in_flight:
                                       the slots taken (connections in use)
                                       as the wait began, -1 unknown
  P <pool> <slots> <site> <caller>     a semaphore or connector that a W
                                       names, before the first one: its value
                                       when it was made (the slots of the
                                       pool it guards; a connector's limit,
                                       0 for none), where it was made, and
                                       the site that called that function
                                       (0: none)
  X <name> <count>                     counters: tasks_dropped, write_errors

Location, task and thread ids: locations and tasks are numbered 1, 2, 3...
per process (0: unknown); <tid> is the thread's native id.

How it hooks (the same on every version 3.8-3.13):

* BaseEventLoop.create_task is wrapped: every task made through a loop's
  create_task (asyncio.create_task, ensure_future, gather, TaskGroup,
  asyncio.run's main task, a user's or the eager task factory...) gets a T
  record, and a weak reference to it goes on its thread's list of young
  tasks (see "Task ends").  The loop's task factory is left alone: with a
  factory installed, 3.13.0's create_task renames every task it makes
  without a name to "None" (visible in reprs and logs), and asyncio.run's
  main task is made before the loop runs.
* asyncio.events._set_running_loop, which run_forever calls as the loop
  starts and again in its `finally`, is wrapped to start the loop's heartbeat
  and, on the way out, to stop it, look at the thread's young tasks and
  flush.  No frame of this file stays on the stack while the loop runs
  (KeyboardInterrupt tracebacks, traceback.print_stack() in a callback read
  as without the agent).
* BaseSelectorEventLoop._process_events, which the loop calls once an
  iteration between its select() and the callbacks it then runs (it only
  queues the callbacks of the events select() returned), is wrapped to look
  at the thread's young tasks first.
* BaseEventLoop.call_exception_handler is wrapped to see the tasks that
  asyncio reports as they are collected ("Task exception was never
  retrieved", "Task was destroyed but it is pending!").  The handler it
  calls runs with the wrapper's frame under it: traceback.print_stack() in
  an exception handler of the program's shows one entry more.
* asyncio.sleep and Lock/Semaphore.acquire are replaced by plain functions
  that return the original coroutine (a coroutine of this file only for an
  acquire that has to wait), marked as coroutine functions for
  asyncio.iscoroutinefunction (and inspect's, on 3.12+).  So a sleep or an
  acquire that does not wait adds no frame, and sys.exc_info() is read in the
  calling coroutine's own frame.
* Semaphore.__init__ is wrapped to note the semaphore's value (the slots of
  the pool it guards) and where it was made, on the semaphore itself; its
  first wait writes them as a P record.
* _sonde_pools.py hooks the connection pools of aiohttp and httpx when the
  program imports them (watch_module: one finder on sys.meta_path while a
  watched module is not imported yet); see its docstring.
* An exception that passes through a wrapper leaves with the wrapper's
  traceback entry taken out (3.11+; on 3.8-3.10 a bare `raise` keeps it, and
  such a traceback shows one more entry, of this file: create_task's
  argument errors, a CancelledError of an acquire that had to wait, a
  KeyboardInterrupt raised in an exception handler).

Task ends.  A done callback per task would cost more than everything else
together (each one is a Handle that the loop schedules and runs), so a task
gets none while it is young: the loop's thread looks at its young tasks
(weak references: a task the program drops is collected as without the
agent) once an iteration, before the iteration's callbacks, from its second
iteration on, and a task found done gets its E record with the time of that
look.  So E's t_ns is late by at most one loop iteration (the rest of the
iteration the task ended in and the next select(); the heartbeat bounds
that wait to about 50 ms).  A task still pending after _YOUNG_LOOKS looks is
old: it gets a done callback then, whose E has the time the loop ran it (one
iteration late as well).  A task that was collected before it was seen done
(one nobody held or awaited, freed in the iteration it ended in) gets E
with the time of the look that finds it gone and the state asyncio reported
for it as it went: the exception's name for "Task exception was never
retrieved", "destroyed" for "Task was destroyed but it is pending!" (sonde
counts that state as a failure), else "ok" (such a task ended, and nobody
can have retrieved an exception of it).  The heartbeat looks as well (for a
loop whose class replaces _process_events), the loop's stop looks at all
the thread's young tasks, and at exit every task gets its E but those still
pending.  The state is read without marking an exception retrieved
(task._exception, not task.exception()): asyncio still logs "Task exception
was never retrieved" as without the agent.

sonde gone.  sonde holds an exclusive flock on its directory (named
sonde-agent-XXXXXX; another directory, a test's or a benchmark's, is never
given up) while it reads it.  At most once a second (from the heartbeat's flush) and at exit, a flush
asks for a shared one without waiting: granted (sonde was killed) or the
directory gone, recording stops for good, in fork children too: the buffers
are dropped, the file and, once empty, the directory removed, the heartbeat
stops, and the wrappers then test one flag per call.  Nothing waits on sonde:
the file is a regular file, written without a lock of sonde's.

Cost: nothing until asyncio is imported; then per task:
* a T record: its values go on a list, and the flush formats many records
  with one format (T, E and W records alike: the lines cost less than one
  format each);
* its site: a walk up the frames to the first user frame, but for a task
  made from the same asyncio frame as the last one (a gather's
  ensure_future calls: the frame, held until the next look, is the key);
* a weak reference, a dictionary entry, and a look at each loop iteration
  while it is young; a task still pending after _YOUNG_LOOKS looks: a done
  callback (one Handle);
* its E record: the tasks a look finds ended ok share one.
Per semaphore made, a site walk.  Per loop iteration one look; per acquire
that waits, a coroutine of this file, a site walk and a W record; per
run_forever a heartbeat timer and a flush.  On the 2-core VM this was tuned on, about 1.5 to 2.5 us of CPU per
task that ends young (3.11-3.13; more on 3.8): about half the done
callback's version.

Nothing here may raise into the program or change what it prints.
"""

import itertools
import os
import sys
import time
import weakref
import _thread

_monotonic_ns = time.monotonic_ns
_getframe = sys._getframe
# 3.12+: a frame's module name without making a frame object for it
_getframemodulename = getattr(sys, "_getframemodulename", None)
_exc_info = sys.exc_info
# Whether an exception is being handled: sys.exception() (3.11+) is None,
# sys.exc_info() is (None, None, None) when not.
_handling = getattr(sys, "exception", _exc_info)
_NOT_HANDLING = None if _handling is not _exc_info else (None, None, None)
_get_native_id = _thread.get_native_id
_ref = weakref.ref

_MAX_TASKS = 2000000           # tasks recorded per process; more are counted
_LAG_NS = 20000000             # heartbeat lateness worth an L record
_BEAT_S = 0.05                 # heartbeat period
_BEAT_NS = 50000000
_FLUSH_NS = 100000000          # the heartbeat flushes this long after a flush
_HOST_CHECK_NS = 1000000000    # a flush looks whether sonde is alive this often
_YOUNG_LOOKS = 6               # looks at a pending task before its callback
_SWEEP_MIN = 65536             # tasks tracked before a sweep of dead ones
_GONE_MAX = 4096               # states of collected tasks kept for a look
_FIELD_MAX = 300               # longest string field
_LOCS_MAX = 200000             # code objects remembered (more: new ids)
_SKIP_MAX = 20000              # file names classified and remembered
# Code flags of frames that run inside a task: coroutine, iterable coroutine
# (types.coroutine), async generator, generator (yield-from chains).
_CO_IN_TASK = 0x20 | 0x80 | 0x100 | 0x200
_QUALNAME = sys.version_info >= (3, 11)
# A comprehension's frame is not a site: its function is (3.12 inlines list,
# set and dict comprehensions, so the same code reads the same on every
# version).
_COMPREHENSIONS = frozenset(("<listcomp>", "<setcomp>", "<dictcomp>",
                             "<genexpr>"))
_COUNTERS = ("tasks_dropped", "write_errors")
# HTTP clients and what they run on, whose frames a site walk goes past like
# asyncio's: a request's wait and a connector's making are the program's call.
_POOL_LIBRARIES = frozenset(("aiohttp", "httpx", "httpcore", "anyio", "h11"))
_POOL_LIBRARY_DIRS = tuple("/%s/" % lib for lib in sorted(_POOL_LIBRARIES))
_T_LINE = "T\t%s\t%d%s"
_W_LINE = "W\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n"

# --- state ---------------------------------------------------------------
_on = False          # recording (SONDE_ASYNCIO_DIR set, file not refused)
_dir = None          # where aio-<pid>.txt goes (absolute)
_pid = 0             # the process the state belongs to
_fd = None           # the open file, None until the first flush
# Pending records, by kind, each in a list that stays the same object (see
# _flush): N lines; T records as their three values in a row (task, t_ns,
# "\t<site>\t<coro>\t<tid>\n"; one extend() each, atomic); E records as
# (t_ns, state, [task, ...]), one per state for the tasks a look found
# ended; the other lines (L, R, P, X); W records as their six values in a row.
# A flush writes them in that order: an N line comes before the records that
# use its id, a T record before its task's other records.  Task ids are kept
# as text from the T record on: each is written twice.
_nbuf = []
_tbuf = []
_ebuf = []
_buf = []
_wbuf = []
_nappend = _nbuf.append
_textend = _tbuf.extend
_eappend = _ebuf.append
_append = _buf.append
_wextend = _wbuf.extend
# Code locations, keyed by id(code): hashing a code object hashes its
# constants every time.  Each code object keyed is kept in _codes, so its id
# cannot be reused while the key is in use.
#   _sites: id(code) -> False for a frame a site walk goes past (asyncio's,
#   a comprehension's...), else a dict: f_lasti -> location id, and
#   -1 - line -> location id (lines seen, so that two calls on one line share
#   an id).
_sites = {}
_coros = {}          # id(code) -> location id of the coroutine's definition
# The last site of a create_task call whose caller and the caller's caller
# are both frames a walk goes past (gather's ensure_future calls...):
# (that second frame, the caller's code (3.12+: its module's name), the
# site).  The frame, held until the next look, is the key: while it runs,
# the frames above it do not change.
_NO_SITE = (None, None, 0)
_last_site = _NO_SITE
_codes = []
_loc_ids = itertools.count(1)
_task_ids = itertools.count(1)
# weakref.ref(task) (the one plain reference Python keeps per object, so a
# look-up makes none) -> its task id (text), from its T record to its E
# record.  Taking the entry out is what gives the right to write the E
# record.
_ids = {}
_sweep_at = _SWEEP_MIN
# hash(task) -> state, for a task that asyncio reported as it was collected
# by the garbage collector: that clears weak references first, so the
# task's entry in _ids is found by the dead reference's hash (kept by the
# reference since its insertion).
_gone = {}
_lock = _thread.allocate_lock()        # location ids and counters
_flush_lock = _thread.allocate_lock()
# Per thread: .st, its _Thread; .hot, its .hot (the one look-up per task).
_tls = _thread._local()
_counters = dict.fromkeys(_COUNTERS, 0)
_counters_written = {}
_last_flush = 0
_host_checked = 0    # when a flush last looked whether sonde is alive
_host_lost = False   # sonde is gone: recording stopped for good
# The directory is one of sonde's, with its lock (src/probes/agent_dir.h:
# "sonde-agent-XXXXXX"); another (a test's, a benchmark's) is never given up.
_host_locks = False
_skip_files = {}     # co_filename -> True when frames of it are not "user"
_skip_modules = {}   # module name -> True likewise (see _skip_module)
_asyncio_prefixes = ()
_own_file = None
_installed = False
_patched = False
_finder = None
_watched = {}        # module name -> its patch (see watch_module)

# originals, set by _patch()
_orig_create_task = None
_orig_set_running_loop = None
_orig_sleep = None
_orig_lock_acquire = None
_orig_sem_acquire = None
_orig_sem_init = None
_pool_ids = itertools.count(1)   # P numbers, given at a semaphore's first wait
_orig_process_events = None
_orig_call_exception_handler = None
_current_task = None
_get_running_loop = None
_Context = None
_task_types = ()


class _Thread(object):
    """A thread's young tasks, as weak references: those made since its
    loop's last look (new), those looked at, by the look that first saw them
    ([look number, [ref...]]), and those a look found on another loop than
    its own (stray: looked at by the heartbeat only)."""

    __slots__ = ("tid", "ctx", "new", "hot", "young", "looks", "beat_looks",
                 "stray", "box")

    def __init__(self):
        self.tid = _get_native_id()
        # The context old tasks' done callbacks run in: an empty one of this
        # thread's own, cheaper than a copy of the current one and never
        # entered by two threads at once.
        self.ctx = _Context()
        self.new = []
        self.hot = (self.new.append, {})    # and T line ends (see _tail)
        self.young = []
        self.looks = 0
        self.beat_looks = -1
        self.stray = []
        self.box = None


def _thread_state():
    try:
        return _tls.st
    except AttributeError:
        st = _tls.st = _Thread()
        _tls.hot = st.hot
        return st


# --- records -------------------------------------------------------------

def _clean(s):
    if not isinstance(s, str):
        s = str(s)
    if "\t" in s or "\n" in s or "\r" in s:
        s = s.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    if len(s) > _FIELD_MAX:
        s = s[:_FIELD_MAX]
    return s


def _count(name, n=1):
    with _lock:
        _counters[name] += n


def _classify(filename):
    """True when frames of this file are asyncio's, this agent's, or the
    plumbing between user code and asyncio (contextlib, functools, threading,
    concurrent.futures), which a site walk goes past."""
    skip = False
    if filename == _own_file:
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
    """_sites' entry for a code object not seen yet: False when a site walk
    goes past its frames, else its (empty) dict of sites; remembered while
    fewer than _LOCS_MAX code objects are."""
    filename = code.co_filename
    skip = _skip_files.get(filename)
    if skip is None:
        skip = _classify(filename)
    entry = False if skip or code.co_name in _COMPREHENSIONS else {}
    with _lock:
        known = _sites.get(id(code))
        if known is not None:
            return known
        if len(_codes) < _LOCS_MAX:
            _sites[id(code)] = entry
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
    text = "%s\t%s\t%d\n" % (_clean(name), _clean(code.co_filename),
                             where or 0)
    key = id(code)
    with _lock:
        if line is None:
            n = _coros.get(key)
        else:
            n = lines.get(-1 - line)
        if n is None:
            n = next(_loc_ids)
            _nappend("N\t%d\t%s" % (n, text))
            if line is None:
                if len(_codes) < _LOCS_MAX:
                    _coros[key] = n
                    _codes.append(code)
            else:
                lines[-1 - line] = n
        if lasti is not None:
            lines[lasti] = n
    return n


def _skip_module(name):
    """True when a walk goes past the frames of functions of this module (by
    name, as sys._getframemodulename() gives it: asyncio's, this agent's, the
    plumbing's of _classify)."""
    skip = _skip_modules.get(name)
    if skip is None:
        skip = bool(name) and (
            name == "asyncio"
            or name.startswith(("asyncio.", "concurrent.futures"))
            or name.partition(".")[0] in _POOL_LIBRARIES
            or name in ("contextlib", "functools", "threading", __name__))
        if len(_skip_modules) < _SKIP_MAX:
            _skip_modules[name] = skip
    return skip


def _site_from(depth, back=None, key=None):
    """_site() of the frame depth up from the caller (1: the caller's
    caller).  3.12+: the frames of asyncio's modules and the like are passed
    by their module's name, without a frame object made for each."""
    depth += 1
    passed = 0
    if _getframemodulename is not None:
        name = _getframemodulename(depth)
        while _skip_modules.get(name) or (
                name not in _skip_modules and _skip_module(name)):
            depth += 1
            passed += 1
            name = _getframemodulename(depth)
    try:
        f = _getframe(depth)
    except ValueError:
        return 0
    return _site(f, back, key, passed)


def _site(f, back=None, key=None, passed=0, _id=id, _get=_sites.get):
    """Location id of the first user frame from f outwards (not asyncio's,
    not a comprehension's...), or 0.  The call's f_lasti finds a site seen
    before, without working out its line.  back, key: for create_task's
    caller, its f_back and _last_site's key; passed: frames passed already
    (see _site_from).  (The defaults after them are bound once: cheaper than
    global names before 3.11.)"""
    global _last_site
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
                _last_site = (back, key, n)
            return n
        passed += 1
        f = f.f_back
    return 0


def _sites_made_at(f):
    """For a semaphore made in frame f: the site of the first user frame
    from f outwards, and of the first user frame that called that one (0:
    none): a pool class's __init__ makes the semaphore, its caller picks the
    size."""
    while f is not None:
        entry = _sites.get(id(f.f_code))
        if entry is None:
            entry = _code_sites(f.f_code)
        if entry is not False:
            return _site(f), _site(f.f_back) if f.f_back is not None else 0
        f = f.f_back
    return 0, 0


def _task_number(task):
    """The task's id (text), "0" when unknown."""
    if task is None:
        return "0"
    try:
        return _ids.get(_ref(task), "0")
    except TypeError:
        return "0"


def _running_task():
    loop = _get_running_loop()
    if loop is None:
        return None
    return _current_task(loop)


def _note_task(task, coro, t, _id=id, _next=next, _str=str, _ref=_ref,
               _textend=_textend, _ids=_ids):
    """The T record of a task just made (t: when create_task was called;
    called by create_task's wrapper: the frame 2 up called create_task) and
    its weak reference on the young list.  (The defaults are bound once, as
    for _site.)"""
    n = _next(_task_ids)
    if n > _MAX_TASKS:
        _count("tasks_dropped")
        return
    last = _last_site
    if _getframemodulename is not None:
        key = _getframemodulename(2)
        try:
            back = _getframe(3)
        except ValueError:
            back = None
        if back is last[0] and back is not None and key is last[1]:
            site = last[2]
        elif back is not None and _skip_modules.get(key):
            site = _site(back, back, key, 1)    # the caller is passed
        else:
            site = _site_from(2, back, key)
    else:
        f = _getframe(2)
        back = f.f_back
        key = f.f_code
        if back is last[0] and back is not None and key is last[1]:
            site = last[2]
        else:
            site = _site(f, back, key)
    try:
        code_id = _id(coro.cr_code)
    except AttributeError:
        code_id = 0
    try:
        young, tails = _tls.hot
    except AttributeError:
        young, tails = _thread_state().hot
    ends = tails.get(code_id)
    tail = None if ends is None else ends.get(site)
    if tail is None:
        tail = _tail(tails, code_id, coro, site)
    n = _str(n)
    _textend((n, t, tail))
    if task.done():
        # made done (an eager task factory's task that did not wait)
        _eappend((_monotonic_ns(), _state(task), [n]))
    else:
        r = _ref(task)
        _ids[r] = n
        young(r)


def _tail(tails, code_id, coro, site):
    """The end of a T line of this thread, for a coroutine (code_id: id(its
    code), 0 for none) and a site: remembered in tails
    (code_id -> {site: end}) while the coroutine's code object is kept (see
    _coros)."""
    if code_id:
        cid = _coros.get(code_id)
        if cid is None:
            cid = _new_loc(coro.cr_code, None, None, coro)
        kept = code_id in _coros
    else:
        cid = 0
        kept = True
    tail = "\t%d\t%d\t%d\n" % (site, cid, _tls.st.tid)
    if kept:
        ends = tails.get(code_id)
        if ends is None or len(ends) >= 4096:
            if len(tails) >= 4096:
                tails.clear()
            ends = tails[code_id] = {}
        ends[site] = tail
    return tail


def _state(task):
    """ok, cancelled, or the exception's type name of a done task.  Its
    _exception, not exception(): that would mark the exception as retrieved
    and silence asyncio's "Task exception was never retrieved"."""
    if task.cancelled():
        return "cancelled"
    exc = getattr(task, "_exception", None)
    if exc is None:
        return "ok"
    return _clean(type(exc).__qualname__)


def _look(st, loop, final=False):
    """Looks at the thread's young tasks: E records for those done or gone,
    done callbacks for those pending after _YOUNG_LOOKS looks.  The tasks
    made since the last look are not looked at yet (they have not run), but
    for a final look (the loop stops)."""
    global _last_site
    _last_site = _NO_SITE
    st.looks = looks = st.looks + 1
    young = st.young
    new = st.new
    if new:
        made = new[:]
        del new[:len(made)]
        young.append([looks, made])
    if not young:
        return
    now = _monotonic_ns()
    pop = _ids.pop
    ok = []
    others = []
    keep_cohorts = []
    for cohort in young:
        born, refs = cohort
        if born == looks and not final:
            keep_cohorts.append(cohort)
            continue
        keep = []
        pending = keep.append
        for r in refs:
            t = r()
            if t is not None and not t.done():
                pending(r)
                continue
            n = pop(r, None)
            if n is None:
                continue
            if t is None:
                state = _gone.pop(hash(r), "ok") if _gone else "ok"
            elif t.cancelled() or getattr(t, "_exception", None) is not None:
                state = _state(t)
            else:
                state = "ok"
            if state == "ok":
                ok.append(n)
            else:
                others.append((now, state, [n]))
        if not keep:
            continue
        if looks - born >= _YOUNG_LOOKS and not final:
            _promote(st, loop, keep)
            continue
        cohort[1] = keep
        keep_cohorts.append(cohort)
    young[:] = keep_cohorts
    if ok:
        _eappend((now, "ok", ok))
    if others:
        _ebuf.extend(others)


def _promote(st, loop, refs):
    """Old tasks: a done callback each, added by their own loop's thread
    (a task on another loop goes to stray)."""
    ctx = st.ctx
    for r in refs:
        t = r()
        if t is None:
            st.stray.append(r)          # gone meanwhile: stray's look
            continue
        try:
            if t.get_loop() is loop:
                t.add_done_callback(_on_done, context=ctx)
            else:
                st.stray.append(r)
        except Exception:
            pass


def _on_done(task):
    """An old task's done callback."""
    try:
        n = _ids.pop(_ref(task), None)
        if n is not None and _on:
            _eappend((_monotonic_ns(), _state(task), [n]))
    except Exception:
        pass


def _ended(r, t, now):
    """The E record of the task of r, gone (t None) or done, unless written
    already."""
    n = _ids.pop(r, None)
    if n is not None:
        if t is None:
            state = _gone.pop(hash(r), "ok") if _gone else "ok"
        else:
            state = _state(t)
        _eappend((now, state, [n]))


def _look_stray(st):
    now = _monotonic_ns()
    keep = []
    for r in st.stray:
        t = r()
        if t is None or t.done():
            _ended(r, t, now)
        else:
            keep.append(r)
    st.stray[:] = keep


def _sweep(final=False):
    """E records for the tasks tracked that are gone (and, at exit, those
    done); _ids loses their entries."""
    global _sweep_at
    now = _monotonic_ns()
    for r in list(_ids):
        t = r()
        if t is None or (final and t.done()):
            _ended(r, t, now)
    _sweep_at = max(_SWEEP_MIN, 2 * len(_ids))


def _note_lost(context):
    """asyncio reports a task as it is collected: pending ("Task was
    destroyed but it is pending!") or with an exception nobody retrieved."""
    task = context.get("task")
    if task is None:
        task = context.get("future")
    if not isinstance(task, _task_types):
        return
    if task.done():
        state = _state(task)
    elif str(context.get("message", "")).startswith("Task was destroyed"):
        state = "destroyed"
    else:
        return
    try:
        n = _ids.pop(_ref(task), None)
    except TypeError:
        return
    if n is not None:
        _eappend((_monotonic_ns(), state, [n]))
    elif _ids:
        # collected by the garbage collector: our reference is dead already
        if len(_gone) >= _GONE_MAX:
            _gone.clear()
        _gone[hash(task)] = state


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
        t, site, int(round(delay * 1e9)), _clean(exc_type.__qualname__),
        task))


def _note_wait(kind, t0, site, n, pool, in_flight):
    if _on:
        try:
            _wextend((t0, _monotonic_ns() - t0, site, n, kind, pool,
                      in_flight))
        except Exception:
            pass


def _pool_of(sem):
    """The P number of a semaphore about to be waited on (its P record
    goes out with the first), 0 when it was made before the hooks."""
    p = getattr(sem, "_sonde_pool", None)
    if p is None:
        return 0
    if not p[0]:
        p[0] = next(_pool_ids)
        _append("P\t%d\t%d\t%d\t%d\n" % (p[0], p[1], p[2], p[3]))
    return p[0]


# --- the file ------------------------------------------------------------

def _host_gone():
    """True when sonde is gone: it holds an exclusive flock on the directory
    while it reads it (src/probes/agent_dir.h), so a shared one is refused
    unless it was killed; a directory removed means it is done.  Never
    waits (LOCK_NB)."""
    import fcntl
    try:
        fd = os.open(_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)        # and the shared lock with it


def _stop_recording():
    """sonde is gone: nobody reads the records any more.  Recording stops
    for good (in fork children too), the file goes, and the directory with
    it when no other agent's file is left, so a program that outlives sonde
    neither fills the disk nor keeps an unlinked file growing."""
    global _on, _fd, _host_lost
    _host_lost = True
    _on = False
    for buf in (_buf, _wbuf, _ebuf, _tbuf, _nbuf):
        del buf[:]
    _ids.clear()
    fd, _fd = _fd, None
    try:
        if fd is not None:
            os.close(fd)
            os.unlink(os.path.join(_dir, "aio-%d.txt" % _pid))
    except OSError:
        pass
    try:
        os.rmdir(_dir)
    except OSError:
        pass


def _open_file():
    path = os.path.join(_dir, "aio-%d.txt" % _pid)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL
             | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        return os.open(path, flags, 0o600)
    except OSError:
        return None


def _lines(line, size, values):
    """The text of records kept as their values in a row, size values each:
    one format for many (cheaper than one each)."""
    out = []
    step = size * 4096
    for i in range(0, len(values), step):
        chunk = values[i:i + step]
        out.append((line * (len(chunk) // size)) % tuple(chunk))
    return "".join(out)


def _e_lines(records):
    """The text of E records."""
    out = []
    add = out.append
    for t, state, ns in records:
        tail = "\t%d\t%s\n" % (t, state)
        add("E\t" + (tail + "E\t").join(ns) + tail)
    return "".join(out)


def _take(buf):
    n = len(buf)
    taken = buf[:n]
    del buf[:n]
    return taken


def _flush(final=False):
    """Appends what is buffered to the file.  Records leave their list by
    slicing it in place (each step atomic under the GIL), so a record another
    thread appends meanwhile stays for the next flush.  The lists are taken
    in the reverse of the order they are written in: a record taken has the
    records it refers to in lists taken after it (or written before)."""
    global _fd, _on, _last_flush, _host_checked
    if not _on:
        return
    if not _flush_lock.acquire(final, 2 if final else -1):
        return
    try:
        if os.getpid() != _pid:
            return                      # a fork child before its reset
        _last_flush = now = _monotonic_ns()
        if _host_locks and (final or now - _host_checked >= _HOST_CHECK_NS):
            _host_checked = now
            if _host_gone():
                _stop_recording()
                return
        written = _counters_written
        recorded = _fd is not None or _buf or _wbuf or _tbuf or _nbuf or _ebuf
        for name in _COUNTERS:
            value = _counters[name]
            if value != written.get(name, 0) or (
                    final and recorded and name not in written):
                _append("X\t%s\t%d\n" % (name, value))
                written[name] = value
        other = _take(_buf)
        waits = _take(_wbuf)
        ends = _take(_ebuf)
        tasks = _take(_tbuf)
        locs = _take(_nbuf)
        if not (other or waits or ends or tasks or locs):
            return
        text = "".join((
            "".join(locs), _lines(_T_LINE, 3, tasks), _e_lines(ends),
            "".join(other), _lines(_W_LINE, 7, waits)))
        if _fd is None:
            fd = _open_file()
            if fd is None:
                _on = False
                for buf in (_buf, _wbuf, _ebuf, _tbuf, _nbuf):
                    del buf[:]
                _ids.clear()
                return
            _fd = fd
            v = sys.version_info
            text = "V\t1\t%d\t%d.%d.%d\n%s" % (_pid, v[0], v[1], v[2], text)
        data = memoryview(text.encode("utf-8", "replace"))
        try:
            while data:
                data = data[os.write(_fd, data):]
        except OSError:
            _counters["write_errors"] += 1
    except Exception:
        pass
    finally:
        _flush_lock.release()


def _at_exit():
    try:
        if _on and os.getpid() == _pid:
            _sweep(True)
    except Exception:
        pass
    try:
        _flush(True)
    except Exception:
        pass


def _after_fork_child():
    global _fd, _pid, _loc_ids, _task_ids, _lock, _flush_lock, _sweep_at
    global _last_site
    global _tls, _counters, _counters_written, _on, _last_flush
    try:
        if _fd is not None:
            os.close(_fd)
    except OSError:
        pass
    _fd = None
    _pid = os.getpid()
    for buf in (_buf, _wbuf, _ebuf, _tbuf, _nbuf):
        del buf[:]
    _sites.clear()
    _coros.clear()
    del _codes[:]
    _loc_ids = itertools.count(1)
    _task_ids = itertools.count(1)
    _ids.clear()
    _gone.clear()
    _last_site = _NO_SITE
    _sweep_at = _SWEEP_MIN
    _lock = _thread.allocate_lock()
    _flush_lock = _thread.allocate_lock()
    _tls = _thread._local()
    _counters = dict.fromkeys(_COUNTERS, 0)
    _counters_written = {}
    _on = bool(_dir) and not _host_lost
    _last_flush = _monotonic_ns()


# --- heartbeat -----------------------------------------------------------

def _beat(loop, box, due):
    if not _on:
        box[0] = None       # sonde is gone (or the file refused): no more beats
        return
    now = _monotonic_ns()
    try:
        if _on:
            st = _thread_state()
            late = now - due
            if late >= _LAG_NS:
                _append("L\t%d\t%d\t%d\n" % (st.tid, now, late))
            if st.looks == st.beat_looks:
                _look(st, loop)      # _process_events did not look
            st.beat_looks = st.looks
            if st.stray:
                _look_stray(st)
            if len(_ids) > _sweep_at:
                _sweep()
            if now - _last_flush >= _FLUSH_NS:
                _flush()
    except Exception:
        pass
    try:
        box[0] = loop.call_later(_BEAT_S, _beat, loop, box,
                                 _monotonic_ns() + _BEAT_NS)
    except Exception:
        box[0] = None


def _loop_started(loop):
    st = _thread_state()
    old = st.box
    if old is not None and old[0] is not None:
        old[0].cancel()
    box = [None]
    st.box = box
    box[0] = loop.call_later(_BEAT_S, _beat, loop, box,
                             _monotonic_ns() + _BEAT_NS)


def _loop_stopped():
    st = _thread_state()
    box = st.box
    st.box = None
    if box is not None and box[0] is not None:
        box[0].cancel()
        box[0] = None
    _look(st, None, True)
    _flush()


# --- wrappers ------------------------------------------------------------

def _strip_own_frame(exc, frame):
    """Drops this wrapper's entry from an exception's traceback before a bare
    `raise`, so tracebacks read as without the agent.  Effective on 3.11+,
    where `raise` re-raises with the exception's __traceback__; before, the
    entry stays (the traceback then shows one more frame)."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame is frame:
        exc.__traceback__ = tb.tb_next


def _debug_source_traceback(loop, task):
    """In debug mode a task keeps the stack it was made from
    (_source_traceback, shown as "created at" in asyncio's logs), and
    create_task drops its own entry from it.  The wrapper's frame adds one
    entry to that stack: it is the last one left (3.11+), or the one
    create_task dropped in place of its caller's (before): either way one
    entry more than without the agent, the last.  With a task factory,
    create_task drops none: this file's entries go."""
    try:
        tb = task._source_traceback
        if not tb:
            return
        if loop._task_factory is None:
            del tb[-1]
        else:
            tb[:] = [e for e in tb if e.filename != _own_file]
    except Exception:
        pass


def _set_running_loop(loop):
    _orig_set_running_loop(loop)
    if _on:
        try:
            if os.getpid() == _pid:
                if loop is None:
                    _loop_stopped()
                elif hasattr(loop, "call_later"):
                    _loop_started(loop)
        except Exception:
            pass


def _make_waiting_acquire(orig):
    """The coroutine function that times an acquire that waits, named as
    the original (its coroutines' names come from it: no attribute to set
    on each)."""
    async def acquire(lock, kind, t0, site, n, pool, in_flight):
        try:
            result = await orig(lock)
        except BaseException as e:
            _note_wait(kind, t0, site, n, pool, in_flight)
            _strip_own_frame(e, _getframe())
            raise
        _note_wait(kind, t0, site, n, pool, in_flight)
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
            pool = _pool_of(lock)
            slots = lock._sonde_pool[1] if pool else None
            in_flight = -1 if slots is None else slots - max(lock._value, 0)
        else:
            pool, in_flight = 0, 1
        return timed(lock, kind, t0, _site_from(2),
                     _task_number(_running_task()), pool, in_flight)
    except Exception:
        return None


def _takes(func, positional, keyword_only):
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


# The wrappers are made by the functions below so that each has the
# original's name in its code: argument errors name the function by it
# before 3.10.  Those taking the original's exact parameters come first (no
# *args/**kwargs to pack: they are on hot paths); the others are for a
# signature this file does not know.

def _make_create_task():
    orig = _orig_create_task
    if _takes(orig, ("self", "coro"), ("name", "context")):
        def create_task(self, coro, *, name=None, context=None):
            t = _monotonic_ns()
            try:
                task = orig(self, coro, name=name, context=context)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
            if self._debug:
                _debug_source_traceback(self, task)
            if _on:
                try:
                    _note_task(task, coro, t)
                except Exception:
                    pass
            return task
    elif _takes(orig, ("self", "coro"), ("name",)):
        def create_task(self, coro, *, name=None):
            t = _monotonic_ns()
            try:
                task = orig(self, coro, name=name)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
            if self._debug:
                _debug_source_traceback(self, task)
            if _on:
                try:
                    _note_task(task, coro, t)
                except Exception:
                    pass
            return task
    else:
        def create_task(self, *args, **kwargs):
            t = _monotonic_ns()
            try:
                task = orig(self, *args, **kwargs)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
            if getattr(self, "_debug", False):
                _debug_source_traceback(self, task)
            if _on:
                try:
                    _note_task(task, args[0] if args else kwargs.get("coro"),
                               t)
                except Exception:
                    pass
            return task
    return create_task


def _make_sleep():
    orig = _orig_sleep
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


def _make_semaphore_init(orig):
    """Semaphore.__init__ (BoundedSemaphore's calls it): the semaphore
    notes its value and where it was made, for the P record of its first
    wait.  A site walk per semaphore made, nothing per acquire."""
    def __init__(self, *args, **kwargs):
        try:
            orig(self, *args, **kwargs)
        except BaseException as e:
            _strip_own_frame(e, _getframe())
            raise
        if _on:
            try:
                made, caller = _sites_made_at(_getframe(1))
                self._sonde_pool = [0, self._value, made, caller]
            except Exception:
                pass
    return __init__


def _make_process_events(orig):
    """The loop's iteration hook: a look at the thread's young tasks, then
    the original, which only queues the callbacks of the events select()
    returned."""
    if _takes(orig, ("self", "event_list"), ()):
        def _process_events(self, event_list):
            if _on:
                try:
                    st = _tls.st
                    if st.young or st.new:
                        _look(st, self)
                except Exception:
                    pass
            try:
                return orig(self, event_list)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    else:
        def _process_events(self, *args, **kwargs):
            if _on:
                try:
                    st = _tls.st
                    if st.young or st.new:
                        _look(st, self)
                except Exception:
                    pass
            try:
                return orig(self, *args, **kwargs)
            except BaseException as e:
                _strip_own_frame(e, _getframe())
                raise
    return _process_events


def _make_call_exception_handler(orig):
    def call_exception_handler(self, *args, **kwargs):
        if _on and args and not kwargs:
            try:
                _note_lost(args[0])
            except Exception:
                pass
        try:
            return orig(self, *args, **kwargs)
        except BaseException as e:
            _strip_own_frame(e, _getframe())
            raise
    return call_exception_handler


# --- installing ----------------------------------------------------------

def _dress(wrapper, orig, is_coroutine=None, inspect=None):
    """Gives the wrapper the original's name, doc and signature (through
    __wrapped__), and marks a coroutine function's replacement as one."""
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


def _patch():
    global _patched, _own_file, _asyncio_prefixes, _current_task
    global _get_running_loop, _orig_create_task, _orig_set_running_loop
    global _orig_sleep, _orig_lock_acquire, _orig_sem_acquire, _Context
    global _orig_sem_init
    global _orig_process_events, _orig_call_exception_handler, _task_types
    if _patched:
        return
    _patched = True
    import asyncio
    import contextvars
    import asyncio.base_events
    import asyncio.coroutines
    import asyncio.events
    import asyncio.locks
    import asyncio.selector_events
    import asyncio.tasks
    import atexit
    base_events, events, locks, tasks = (
        asyncio.base_events, asyncio.events, asyncio.locks, asyncio.tasks)
    inspect = sys.modules.get("inspect")
    is_coroutine = getattr(asyncio.coroutines, "_is_coroutine", None)

    _own_file = _note_task.__code__.co_filename
    prefixes = set()
    for where in (getattr(asyncio, "__file__", None),
                  tasks.sleep.__code__.co_filename):
        if where:
            prefixes.add(os.path.dirname(where) + os.sep)
    prefixes.add("<frozen asyncio")
    _asyncio_prefixes = tuple(sorted(prefixes))
    _current_task = tasks.current_task
    _Context = contextvars.Context
    _task_types = tuple(set(
        c for c in (tasks.Task, getattr(tasks, "_PyTask", None),
                    getattr(tasks, "_CTask", None)) if isinstance(c, type)))
    _get_running_loop = events._get_running_loop
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork_child)

    loop_class = base_events.BaseEventLoop
    _orig_create_task = loop_class.create_task
    loop_class.create_task = _dress(_make_create_task(), _orig_create_task)

    _orig_call_exception_handler = loop_class.call_exception_handler
    loop_class.call_exception_handler = _dress(
        _make_call_exception_handler(_orig_call_exception_handler),
        _orig_call_exception_handler)
    selector_class = asyncio.selector_events.BaseSelectorEventLoop
    _orig_process_events = selector_class._process_events
    selector_class._process_events = _dress(
        _make_process_events(_orig_process_events), _orig_process_events)

    _orig_set_running_loop = events._set_running_loop
    events._set_running_loop = _dress(_set_running_loop,
                                      _orig_set_running_loop)

    _orig_sleep = tasks.sleep
    wrapped_sleep = _dress(_make_sleep(), _orig_sleep, is_coroutine, inspect)
    tasks.sleep = wrapped_sleep
    if getattr(asyncio, "sleep", None) is _orig_sleep:
        asyncio.sleep = wrapped_sleep

    _orig_lock_acquire = locks.Lock.acquire
    locks.Lock.acquire = _dress(_make_acquire(_orig_lock_acquire, "lock"),
                                _orig_lock_acquire, is_coroutine, inspect)
    _orig_sem_acquire = locks.Semaphore.acquire
    locks.Semaphore.acquire = _dress(
        _make_acquire(_orig_sem_acquire, "semaphore"), _orig_sem_acquire,
        is_coroutine, inspect)
    _orig_sem_init = locks.Semaphore.__init__
    locks.Semaphore.__init__ = _dress(_make_semaphore_init(_orig_sem_init),
                                      _orig_sem_init)
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
    global _installed, _on, _dir, _pid, _last_flush, _host_locks
    if _installed:
        return
    where = os.environ.get("SONDE_ASYNCIO_DIR")
    if not where:
        return
    _installed = True
    _dir = os.path.abspath(where)
    _host_locks = os.path.basename(_dir).startswith("sonde-agent-")
    _pid = os.getpid()
    _last_flush = _monotonic_ns()
    _on = True
    watch_module("asyncio", _patch_quietly)
