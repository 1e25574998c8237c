# sonde's --function agent for Python: wraps the functions sonde was asked
# to time when their module is imported, without touching any file.
#
# sitecustomize.py (next to this file) calls install() when
# SONDE_FUNCTION_DIR is set; SONDE_FUNCTIONS holds one "id<TAB>spec" line
# per Python --function SPEC: "path/module.py:Class.method" (the module whose
# file that is) or "package.module:func" (the module of that name).  An
# import hook wraps the function once its module has run (a module imported
# already is wrapped at once).  Each call is timed (wall on CLOCK_MONOTONIC
# and the thread's CPU time), its caller named (file, function, line), and
# the function's own lines timed: sys.monitoring's LINE events on its code
# alone on 3.12+, a trace function that follows only its frames elsewhere.
# A function of the main script is wrapped at its first call (_watch_main).
# What timing costs is measured once per process (a wrapped empty function
# against a bare one) and reported.
#
# Records go to fn-PID.txt in SONDE_FUNCTION_DIR, one line each, fields
# separated by tabs (src/probes/fn_wire.h):
#   V version pid python_version
#   F target status function file line note   (status: wrapped, not_found)
#   K id function file line                    a caller (ids per process)
#   C target tid t_ns wall_ns cpu_ns caller    one call
#   L target line hits wall_ns text            a line's totals (at exit)
#   O target calls overhead_ns                 calls counted (at exit)

import os
import sys
import threading
import time

VERSION = 1
_BATCH = 2000            # calls buffered before a write
_FLUSH_NS = 200000000    # or this long since the last write

_dir = None
_pid = 0
_fd = None
_buf = []
_last_flush = 0
_lock = threading.Lock()
_targets = {}            # id -> _Target
_callers = {}            # (filename, name, line) -> id
_local = threading.local()
_overhead_ns = None
_mon_tool = None


class _Target(object):
    def __init__(self, tid, spec):
        self.id = tid
        self.spec = spec
        where, _, self.qualname = spec.rpartition(":")
        self.path = None
        self.module = None
        if where.endswith(".py"):
            self.path = os.path.realpath(where)
        else:
            self.module = where
        self.wrapped = False
        self.note = None
        self.code = None
        self.calls = 0
        self.lines = {}      # line -> [hits, wall_ns]
        self.sink = _buf     # where its calls' records go

    def wants(self, name, origin):
        if self.wrapped:
            return False
        if self.module is not None:
            return name == self.module
        try:
            return origin is not None and os.path.realpath(origin) == self.path
        except Exception:
            return False


def _write(text):
    global _fd
    if _fd is None:
        return
    try:
        os.write(_fd, text.encode("utf-8", "replace"))
    except OSError:
        _fd = None


def _flush():
    global _last_flush
    with _lock:
        out = "".join(_buf)
        del _buf[:]
        _last_flush = time.monotonic_ns()
    if out:
        _write(out)


def _clean(s):
    return str(s).replace("\t", " ").replace("\n", " ")[:1000]


def _caller_id(frame):
    if frame is None:
        return 0
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    key = (code.co_filename, name)
    cid = _callers.get(key)
    if cid is None:
        cid = len(_callers) + 1
        _callers[key] = cid
        with _lock:
            _buf.append("K\t%d\t%s\t%s\t%d\n" % (
                cid, _clean(name), _clean(code.co_filename), frame.f_lineno))
    return cid


# --- lines of the function ------------------------------------------------

class _Lines(object):
    """One call's line clock: the line running and when it began."""
    __slots__ = ("target", "line", "t")

    def __init__(self, target, t):
        self.target = target
        self.line = 0
        self.t = t

    def step(self, line, now):
        if self.line:
            acc = self.target.lines.get(self.line)
            if acc is None:
                acc = self.target.lines[self.line] = [0, 0]
            acc[0] += 1
            acc[1] += now - self.t
        self.line = line
        self.t = now


def _stack():
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def _mon_line(code, line):
    s = getattr(_local, "stack", None)
    if s and s[-1].target.code is code:
        s[-1].step(line, time.monotonic_ns())


def _trace_local(frame, event, arg):
    if event == "line":
        s = getattr(_local, "stack", None)
        if s and s[-1].target.code is frame.f_code:
            s[-1].step(frame.f_lineno, time.monotonic_ns())
    return _trace_local


def _trace_global(frame, event, arg):
    s = getattr(_local, "stack", None)
    if s and frame.f_code is s[-1].target.code:
        return _trace_local
    return None


def _monitoring():
    """sys.monitoring and the tool id taken (3.12+), or (None, -1)."""
    global _mon_tool
    mon = getattr(sys, "monitoring", None)
    if mon is None:
        return None, -1
    if _mon_tool is None:
        for tool in (5, 4, 3, 2):
            if mon.get_tool(tool) is None:
                mon.use_tool_id(tool, "sonde-function")
                mon.register_callback(tool, mon.events.LINE, _mon_line)
                _mon_tool = tool
                break
        else:
            _mon_tool = -1
    return mon, _mon_tool


def _lines_on(target):
    """Line events for target's code alone, from now on."""
    mon, tool = _monitoring()
    if tool >= 0:
        mon.set_local_events(tool, target.code, mon.events.LINE)


# --- the wrapper ----------------------------------------------------------

def _wrap(target, fn):
    import functools
    use_trace = getattr(sys, "monitoring", None) is None or _mon_tool == -1
    monotonic_ns = time.monotonic_ns
    thread_time_ns = time.thread_time_ns
    getframe = sys._getframe

    @functools.wraps(fn)
    def sonde_timed(*args, **kwargs):
        stack = _stack()
        c0 = thread_time_ns()
        t0 = monotonic_ns()
        stack.append(_Lines(target, t0))
        old = None
        if use_trace:
            old = sys.gettrace()
            if old is None:
                sys.settrace(_trace_global)
        try:
            return fn(*args, **kwargs)
        finally:
            t1 = monotonic_ns()
            c1 = thread_time_ns()
            if use_trace and old is None:
                sys.settrace(None)
            stack.pop().step(0, t1)
            target.calls += 1
            cid = _caller_id(getframe(1))
            sink = target.sink
            with _lock:
                sink.append("C\t%d\t%d\t%d\t%d\t%d\t%d\n" % (
                    target.id, threading.get_native_id(), t0, t1 - t0,
                    c1 - c0, cid))
                full = sink is _buf and (len(_buf) >= _BATCH
                                         or t1 - _last_flush > _FLUSH_NS)
            if full:
                _flush()
    sonde_timed.__sonde_wrapped__ = True
    return sonde_timed


def _find(module, qualname):
    """(owner, name, raw attribute) of qualname in module, or None."""
    owner = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part, None)
        if owner is None:
            return None
    d = getattr(owner, "__dict__", {})
    raw = d.get(parts[-1], getattr(owner, parts[-1], None))
    return (owner, parts[-1], raw) if raw is not None else None


def _nearest(module, qualname):
    import difflib
    names = []
    owner = module
    prefix = ""
    for part in qualname.split(".")[:-1]:
        nxt = getattr(owner, part, None)
        if nxt is None:
            break
        owner, prefix = nxt, prefix + part + "."
    for k, v in list(getattr(owner, "__dict__", {}).items()):
        if callable(v) or isinstance(v, (staticmethod, classmethod)):
            names.append(prefix + k)
    return difflib.get_close_matches(qualname, names, n=3, cutoff=0.5)


def _wrap_in(target, module):
    found = _find(module, target.qualname)
    where = getattr(module, "__file__", None) or target.spec
    if found is None:
        near = _nearest(module, target.qualname)
        target.note = "%s has no function %s%s" % (
            where, target.qualname,
            "; nearest: " + ", ".join(near) if near else "")
        return
    owner, name, raw = found
    kind = type(raw)
    fn = raw.__func__ if kind in (staticmethod, classmethod) else raw
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "__sonde_wrapped__", False):
        target.note = "%s.%s is not a Python function" % (where, target.qualname)
        return
    target.code = code
    _lines_on(target)
    wrapped = _wrap(target, fn)
    setattr(owner, name, kind(wrapped) if kind in (staticmethod, classmethod) else wrapped)
    target.wrapped = True
    target.note = None
    with _lock:
        _buf.append("F\t%d\twrapped\t%s\t%s\t%d\t\n" % (
            target.id, _clean(target.qualname), _clean(code.co_filename),
            code.co_firstlineno))
    _measure_overhead()


def _measure_overhead():
    """CPU ns a timed call costs more than a bare one (best of 5 rounds)."""
    global _overhead_ns
    if _overhead_ns is not None:
        return
    probe = _Target(0, "sonde:probe")

    def bare(x):
        y = x + 1
        return y

    probe.code = bare.__code__
    probe.sink = []
    _lines_on(probe)
    timed = _wrap(probe, bare)
    n, best = 1000, None
    clock = time.thread_time_ns  # CPU time: a busy machine's waits are not cost
    for _ in range(5):
        del probe.sink[:]
        t0 = clock()
        for i in range(n):
            bare(i)
        t1 = clock()
        for i in range(n):
            timed(i)
        t2 = clock()
        d = ((t2 - t1) - (t1 - t0)) / n
        best = d if best is None else min(best, d)
    mon = getattr(sys, "monitoring", None)
    if mon is not None and _mon_tool is not None and _mon_tool >= 0:
        mon.set_local_events(_mon_tool, probe.code, 0)
    _overhead_ns = max(best, 0)


# --- the import hook ------------------------------------------------------

class _Finder(object):
    """First on sys.meta_path: asks the finders after it, and when the spec
    found is a wanted module's, has its loader wrap the function after the
    module ran."""

    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if name in self._busy or not any(not t.wrapped for t in _targets.values()):
            return None
        self._busy.add(name)
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None:
            return spec
        wanted = [t for t in _targets.values() if t.wants(name, spec.origin)]
        if (wanted and hasattr(spec.loader, "exec_module")
                and not isinstance(spec.loader, type)):
            run = spec.loader.exec_module

            def exec_module(module, run=run, wanted=wanted):
                run(module)
                for t in wanted:
                    try:
                        _wrap_in(t, module)
                    except Exception as e:
                        t.note = "cannot wrap it: %s" % _clean(e)
            try:
                spec.loader.exec_module = exec_module
            except Exception:
                pass
        return spec


# --- the main script -----------------------------------------------------

def _watch_main():
    """Functions of the main script (`python3 app.py` with app.py:func) do
    not go through the import system: each is wrapped at its first call,
    seen by a PY_START event (3.12+: every other code location is disabled
    after its first start, so it costs nothing after) or a profile function
    on the main thread (before 3.12, until the last is found). That first
    call is counted, not timed."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0 in ("-c", "-m") or not argv0.endswith(".py"):
        return
    main_path = os.path.realpath(argv0)
    pending = [t for t in _targets.values() if t.path == main_path]
    if not pending:
        return
    seen = {}

    def match(code):
        t = seen.get(code, False)
        if t is False:
            t = None
            if code.co_filename == argv0 or os.path.realpath(code.co_filename) == main_path:
                name = getattr(code, "co_qualname", None)
                for c in pending:
                    if not c.wrapped and (c.qualname == name or (
                            name is None and c.qualname.rsplit(".", 1)[-1] == code.co_name)):
                        t = c
            seen[code] = t
        return t

    def found(t):
        module = sys.modules.get("__main__")
        if module is not None:
            _wrap_in(t, module)
        if t.wrapped:
            t.calls += 1
        return all(c.wrapped for c in pending)

    mon, tool = _monitoring()
    if tool >= 0:
        def on_start(code, offset):
            t = match(code)
            if t is None:
                return mon.DISABLE
            if found(t):
                mon.set_events(tool, 0)
            return None
        mon.register_callback(tool, mon.events.PY_START, on_start)
        mon.set_events(tool, mon.events.PY_START)
        return

    def on_call(frame, event, arg):
        if event == "call":
            t = match(frame.f_code)
            if t is not None and found(t):
                sys.setprofile(None)
    sys.setprofile(on_call)


# --- the file -------------------------------------------------------------

def _open():
    global _fd
    path = os.path.join(_dir, "fn-%d.txt" % _pid)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
             | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        _fd = os.open(path, flags, 0o600)
    except OSError:
        _fd = None
    _write("V\t%d\t%d\t%s\n" % (VERSION, _pid, sys.version.split()[0]))


def _at_exit():
    with _lock:
        for t in _targets.values():
            if not t.wrapped:
                _buf.append("F\t%d\tnot_found\t%s\t\t0\t%s\n" % (
                    t.id, _clean(t.qualname), _clean(
                        t.note or "no module %s was imported" % (
                            t.module or t.path))))
                continue
            for line, (hits, ns) in sorted(t.lines.items()):
                _buf.append("L\t%d\t%d\t%d\t%d\t%s\n" % (
                    t.id, line, hits, ns, _clean(_source_line(t.code, line))))
            _buf.append("O\t%d\t%d\t%d\n" % (t.id, t.calls, _overhead_ns or 0))
    _flush()


def _source_line(code, line):
    try:
        import linecache
        return linecache.getline(code.co_filename, line).strip()
    except Exception:
        return ""


def _after_fork_child():
    global _pid, _fd, _callers
    _pid = os.getpid()
    with _lock:
        del _buf[:]
    _callers = {}
    for t in _targets.values():
        t.calls = 0
        t.lines = {}
    _open()
    for t in _targets.values():
        if t.wrapped:
            _buf.append("F\t%d\twrapped\t%s\t%s\t%d\t\n" % (
                t.id, _clean(t.qualname), _clean(t.code.co_filename),
                t.code.co_firstlineno))


def install():
    global _dir, _pid
    if sys.version_info < (3, 8) or _dir is not None:
        return
    where = os.environ.get("SONDE_FUNCTION_DIR")
    if not where:
        return
    for line in os.environ.get("SONDE_FUNCTIONS", "").splitlines():
        tid, _, spec = line.partition("\t")
        if tid.isdigit() and ":" in spec:
            _targets[int(tid)] = _Target(int(tid), spec)
    if not _targets:
        return
    _dir = os.path.abspath(where)
    _pid = os.getpid()
    _open()
    sys.meta_path.insert(0, _Finder())
    for t in _targets.values():
        for name, module in list(sys.modules.items()):
            if module is not None and t.wants(name, getattr(module, "__file__", None)):
                _wrap_in(t, module)
    _watch_main()
    import atexit
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork_child)
