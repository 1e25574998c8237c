"""The asyncio recorder's task tracking (T and E records), part of the
recorder (_sonde_asyncio.py).

patch() wraps three methods of asyncio's loops (the same on every version
3.8-3.13):

* BaseEventLoop.create_task: every task made through a loop's create_task
  (asyncio.create_task, ensure_future, gather, TaskGroup, asyncio.run's main
  task, a user's or the eager task factory...) gets a T record, and a weak
  reference to it goes on its thread's list of young tasks (see "Task
  ends").  The loop's task factory is left alone: with a factory installed,
  3.13.0's create_task renames every task it makes without a name to "None"
  (visible in reprs and logs), and asyncio.run's main task is made before
  the loop runs.
* BaseSelectorEventLoop._process_events, which the loop calls once an
  iteration between its select() and the callbacks it then runs (it only
  queues the callbacks of the events select() returned): the thread's young
  tasks are looked at first.
* BaseEventLoop.call_exception_handler, to see the tasks that asyncio
  reports as they are collected ("Task exception was never retrieved",
  "Task was destroyed but it is pending!").  The handler it calls runs with
  the wrapper's frame under it: traceback.print_stack() in an exception
  handler of the program's shows one entry more.

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
loop whose class replaces _process_events: beat_look()), the loop's stop
looks at all the thread's young tasks (look(st, None, True)), and at exit
every task gets its E but those still pending (sweep(True)).  The state is
read without marking an exception retrieved (task._exception, not
task.exception()): asyncio still logs "Task exception was never retrieved"
as without the agent.

Cost per task: a T record's values on a list; its site (a walk up the
frames to the first user frame, but for a task made from the same asyncio
frame as the last one: a gather's ensure_future calls); a weak reference, a
dictionary entry, and a look at each loop iteration while it is young; a
task still pending after _YOUNG_LOOKS looks: a done callback (one Handle);
its E record: the tasks a look finds ended ok share one.
"""

import itertools
import sys
import time
import weakref
import _thread

import _sonde_asyncio_sites as _sites
import _sonde_asyncio_wire as _wire
from _sonde_asyncio_sites import site as _site, site_from as _site_from
from _sonde_asyncio_wire import eappend as _eappend, ebuf as _ebuf
from _sonde_asyncio_wire import textend as _textend
from _sonde_asyncio_wrap import dress as _dress, takes as _takes
from _sonde_asyncio_wrap import strip_own_frame as _strip_own_frame

_monotonic_ns = time.monotonic_ns
_getframe = sys._getframe
_getframemodulename = _sites.getframemodulename
_get_native_id = _thread.get_native_id
_ref = weakref.ref
_last_site = _sites.last_site
_NO_SITE = _sites.NO_SITE
_skip_modules = _sites.skip_modules
_coros = _sites.coros

_MAX_TASKS = 2000000           # tasks recorded per process; more are counted
_YOUNG_LOOKS = 6               # looks at a pending task before its callback
_SWEEP_MIN = 65536             # tasks tracked before a sweep of dead ones
_GONE_MAX = 4096               # states of collected tasks kept for a look

_on = False                    # _wire's, copied (see share_on)
_wire.share_on(globals())
_task_ids = itertools.count(1)
# weakref.ref(task) (the one plain reference Python keeps per object, so a
# look-up makes none) -> its task id (text), from its T record to its E
# record.  Taking the entry out is what gives the right to write the E
# record.
_ids = {}
_wire.on_stop(_ids.clear)
_sweep_at = _SWEEP_MIN
# hash(task) -> state, for a task that asyncio reported as it was collected
# by the garbage collector: that clears weak references first, so the
# task's entry in _ids is found by the dead reference's hash (kept by the
# reference since its insertion).
_gone = {}
# Per thread: .st, its _Thread; .hot, its .hot (the one look-up per task).
_tls = _thread._local()

# asyncio's, set by patch()
_current_task = None
_get_running_loop = None
_Context = None
_task_types = ()


class _Thread(object):
    """A thread's young tasks, as weak references: those made since its
    loop's last look (new), those looked at, by the look that first saw them
    ([look number, [ref...]]), and those a look found on another loop than
    its own (stray: looked at by the heartbeat only).  tid: the thread's
    native id; box: its loop's heartbeat (_sonde_asyncio_beat.py)."""

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


def thread_state():
    """The calling thread's _Thread."""
    try:
        return _tls.st
    except AttributeError:
        st = _tls.st = _Thread()
        _tls.hot = st.hot
        return st


def task_number(task):
    """The task's id (text), "0" when unknown."""
    if task is None:
        return "0"
    try:
        return _ids.get(_ref(task), "0")
    except TypeError:
        return "0"


def running_task():
    """The task running in this thread's loop, or None."""
    loop = _get_running_loop()
    if loop is None:
        return None
    return _current_task(loop)


def _note_task(task, coro, t, _id=id, _next=next, _str=str, _ref=_ref,
               _textend=_textend, _ids=_ids):
    """The T record of a task just made (t: when create_task was called;
    called by create_task's wrapper: the frame 2 up called create_task) and
    its weak reference on the young list.  (The defaults are bound once, as
    for _sonde_asyncio_sites.site.)"""
    n = _next(_task_ids)
    if n > _MAX_TASKS:
        _wire.count("tasks_dropped")
        return
    last = _last_site[0]
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
        young, tails = thread_state().hot
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
    _sonde_asyncio_sites.coros)."""
    if code_id:
        cid = _coros.get(code_id)
        if cid is None:
            cid = _sites.coro_loc(coro)
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
    return _wire.clean(type(exc).__qualname__)


def look(st, loop, final=False):
    """Looks at the thread's young tasks: E records for those done or gone,
    done callbacks for those pending after _YOUNG_LOOKS looks.  The tasks
    made since the last look are not looked at yet (they have not run), but
    for a final look (the loop stops)."""
    _last_site[0] = _NO_SITE
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


def sweep(final=False):
    """E records for the tasks tracked that are gone (and, at exit, those
    done); _ids loses their entries."""
    global _sweep_at
    now = _monotonic_ns()
    for r in list(_ids):
        t = r()
        if t is None or (final and t.done()):
            _ended(r, t, now)
    _sweep_at = max(_SWEEP_MIN, 2 * len(_ids))


def beat_look(st, loop):
    """The heartbeat's part: a look when _process_events made none since the
    last beat (a loop whose class replaces it), the stray tasks, and a
    sweep when many tasks are tracked."""
    if st.looks == st.beat_looks:
        look(st, loop)      # _process_events did not look
    st.beat_looks = st.looks
    if st.stray:
        _look_stray(st)
    if len(_ids) > _sweep_at:
        sweep()


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


# --- the wrappers (see _sonde_asyncio_wrap.py) ------------------------------

def _debug_source_traceback(loop, task):
    """In debug mode a task keeps the stack it was made from
    (_source_traceback, shown as "created at" in asyncio's logs), and
    create_task drops its own entry from it.  The wrapper's frame adds one
    entry to that stack: it is the last one left (3.11+), or the one
    create_task dropped in place of its caller's (before): either way one
    entry more than without the agent, the last.  With a task factory,
    create_task drops none: the recorder's entries go."""
    try:
        tb = task._source_traceback
        if not tb:
            return
        if loop._task_factory is None:
            del tb[-1]
        else:
            own = _sites.own_files
            tb[:] = [e for e in tb if e.filename not in own]
    except Exception:
        pass


def _make_create_task(orig):
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
                        look(st, self)
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
                        look(st, self)
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


def start(asyncio):
    """Takes asyncio's task and loop functions (asyncio: the package, with
    events and tasks imported)."""
    global _current_task, _get_running_loop, _Context, _task_types
    import contextvars
    tasks = asyncio.tasks
    _current_task = tasks.current_task
    _Context = contextvars.Context
    _task_types = tuple(set(
        c for c in (tasks.Task, getattr(tasks, "_PyTask", None),
                    getattr(tasks, "_CTask", None)) if isinstance(c, type)))
    _get_running_loop = asyncio.events._get_running_loop


def patch(asyncio):
    """Wraps create_task and call_exception_handler of BaseEventLoop, and
    _process_events of BaseSelectorEventLoop."""
    loop_class = asyncio.base_events.BaseEventLoop
    orig = loop_class.create_task
    loop_class.create_task = _dress(_make_create_task(orig), orig)
    orig = loop_class.call_exception_handler
    loop_class.call_exception_handler = _dress(
        _make_call_exception_handler(orig), orig)
    selector_class = asyncio.selector_events.BaseSelectorEventLoop
    orig = selector_class._process_events
    selector_class._process_events = _dress(_make_process_events(orig), orig)


def after_fork_child():
    """A fork child numbers its own tasks from 1 and tracks none of its
    parent's."""
    global _task_ids, _sweep_at, _tls
    _task_ids = itertools.count(1)
    _ids.clear()
    _gone.clear()
    _sweep_at = _SWEEP_MIN
    _tls = _thread._local()
