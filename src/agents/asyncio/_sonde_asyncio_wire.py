"""The asyncio recorder's records and their file: the wire contract with
sonde's C side (src/probes/aio_wire.h), part of the recorder
(_sonde_asyncio.py).

The other modules put records in the buffers below (never formatting a line
that a flush can format for many); flush() appends them to
$SONDE_ASYNCIO_DIR/aio-<pid>.txt, which sonde reads.  The format:

  one record a line, fields separated by one TAB, every line ending in "\\n",
  UTF-8 (unencodable characters replaced); string fields have TAB, CR and LF
  replaced by a space and are cut to 300 characters; times are
  time.monotonic_ns() (CLOCK_MONOTONIC); integers in decimal.

  V 1 <pid> <major.minor.micro>        first line of the file
  N <id> <function> <file> <line>      a code location, before its first use
  T <task> <t_ns> <site> <coro> <tid>  a task was created
  E <task> <t_ns> <state>              it finished: ok, cancelled or the
                                       exception's type __qualname__ (see
                                       "Task ends" in _sonde_asyncio_tasks.py
                                       for t_ns, and for "destroyed")
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

sonde gone.  sonde holds an exclusive flock on its directory (named
sonde-agent-XXXXXX; another directory, a test's or a benchmark's, is never
given up) while it reads it.  At most once a second (from the heartbeat's
flush) and at exit, a flush asks for a shared one without waiting: granted
(sonde was killed) or the directory gone, recording stops for good, in fork
children too: the buffers are dropped (and what on_stop() registered), the
file and, once empty, the directory removed, the heartbeat stops, and the
wrappers then test one flag per call.  Nothing waits on sonde: the file is a
regular file, written without a lock of sonde's.

The flag is _on: recording (start() called, the file not refused, sonde not
gone).  A module that tests it on a hot path keeps a copy among its own
globals (share_on(globals())), which _set_on() keeps equal: a global of its
own module costs less to read than another module's attribute.

Nothing here may raise into the program.
"""

import os
import sys
import time
import _thread

_monotonic_ns = time.monotonic_ns

_FLUSH_NS = 100000000          # the heartbeat flushes this long after a flush
_HOST_CHECK_NS = 1000000000    # a flush looks whether sonde is alive this often
_FIELD_MAX = 300               # longest string field
_COUNTERS = ("tasks_dropped", "write_errors")
_T_LINE = "T\t%s\t%d%s"
_W_LINE = "W\t%d\t%d\t%d\t%s\t%s\t%d\t%d\n"

_on = False          # recording (see the docstring)
_on_copies = []      # globals() of the modules that keep a copy of _on
_on_stop = []        # called when recording stops for good (see on_stop)
_dir = None          # where aio-<pid>.txt goes (absolute)
_pid = 0             # the process the state belongs to
_fd = None           # the open file, None until the first flush
# Pending records, by kind, each in a list that stays the same object (see
# flush): N lines; T records as their three values in a row (task, t_ns,
# "\t<site>\t<coro>\t<tid>\n"; one extend() each, atomic); E records as
# (t_ns, state, [task, ...]), one per state for the tasks a look found
# ended; the other lines (L, R, P, X); W records as their seven values in a
# row.  A flush writes them in that order: an N line comes before the
# records that use its id, a T record before its task's other records.
# Task ids are kept as text from the T record on: each is written twice.
nbuf = []
tbuf = []
ebuf = []
buf = []
wbuf = []
nappend = nbuf.append
textend = tbuf.extend
eappend = ebuf.append
append = buf.append
wextend = wbuf.extend
_lock = _thread.allocate_lock()        # the counters
_flush_lock = _thread.allocate_lock()
_counters = dict.fromkeys(_COUNTERS, 0)
_counters_written = {}
_last_flush = 0
_host_checked = 0    # when a flush last looked whether sonde is alive
_host_lost = False   # sonde is gone: recording stopped for good
# The directory is one of sonde's, with its lock (src/probes/agent_dir.h:
# "sonde-agent-XXXXXX"); another (a test's, a benchmark's) is never given up.
_host_locks = False


def share_on(namespace):
    """namespace (a module's globals()) gets its own _on, kept equal to this
    module's from now on."""
    namespace["_on"] = _on
    _on_copies.append(namespace)


def _set_on(value):
    global _on
    _on = value
    for namespace in _on_copies:
        namespace["_on"] = value


def on_stop(drop):
    """drop() is called when recording stops for good (the file refused,
    sonde gone): what was kept for records to come is dropped."""
    _on_stop.append(drop)


def start(where, pid, t_ns):
    """Starts recording into the directory where (absolute) for the process
    pid, as of t_ns (the last flush's time: the first comes _FLUSH_NS
    later)."""
    global _dir, _pid, _last_flush, _host_locks
    _dir = where
    _host_locks = os.path.basename(_dir).startswith("sonde-agent-")
    _pid = pid
    _last_flush = t_ns
    _set_on(True)


def clean(s):
    """s as a string field."""
    if not isinstance(s, str):
        s = str(s)
    if "\t" in s or "\n" in s or "\r" in s:
        s = s.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    if len(s) > _FIELD_MAX:
        s = s[:_FIELD_MAX]
    return s


def count(name, n=1):
    """Adds n to the counter name (an X record at the next flush)."""
    with _lock:
        _counters[name] += n


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


def _drop_all():
    """Recording stops for good: the records pending and what was kept for
    records to come go."""
    _set_on(False)
    for pending in (buf, wbuf, ebuf, tbuf, nbuf):
        del pending[:]
    for drop in _on_stop:
        drop()


def _stop_recording():
    """sonde is gone: nobody reads the records any more.  Recording stops
    for good (in fork children too), the file goes, and the directory with
    it when no other agent's file is left, so a program that outlives sonde
    neither fills the disk nor keeps an unlinked file growing."""
    global _fd, _host_lost
    _host_lost = True
    _drop_all()
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


def _take(pending):
    n = len(pending)
    taken = pending[:n]
    del pending[:n]
    return taken


def flush(final=False):
    """Appends what is buffered to the file.  Records leave their list by
    slicing it in place (each step atomic under the GIL), so a record another
    thread appends meanwhile stays for the next flush.  The lists are taken
    in the reverse of the order they are written in: a record taken has the
    records it refers to in lists taken after it (or written before)."""
    global _fd, _last_flush, _host_checked
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
        recorded = _fd is not None or buf or wbuf or tbuf or nbuf or ebuf
        for name in _COUNTERS:
            value = _counters[name]
            if value != written.get(name, 0) or (
                    final and recorded and name not in written):
                append("X\t%s\t%d\n" % (name, value))
                written[name] = value
        other = _take(buf)
        waits = _take(wbuf)
        ends = _take(ebuf)
        tasks = _take(tbuf)
        locs = _take(nbuf)
        if not (other or waits or ends or tasks or locs):
            return
        text = "".join((
            "".join(locs), _lines(_T_LINE, 3, tasks), _e_lines(ends),
            "".join(other), _lines(_W_LINE, 7, waits)))
        if _fd is None:
            fd = _open_file()
            if fd is None:
                _drop_all()
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


def after_fork_child():
    """A fork child's own file, records and counters: none yet."""
    global _fd, _pid, _lock, _flush_lock, _counters, _counters_written
    global _last_flush
    try:
        if _fd is not None:
            os.close(_fd)
    except OSError:
        pass
    _fd = None
    _pid = os.getpid()
    for pending in (buf, wbuf, ebuf, tbuf, nbuf):
        del pending[:]
    _lock = _thread.allocate_lock()
    _flush_lock = _thread.allocate_lock()
    _counters = dict.fromkeys(_COUNTERS, 0)
    _counters_written = {}
    _set_on(bool(_dir) and not _host_lost)
    _last_flush = _monotonic_ns()


def in_own_process():
    """False in a fork child before its reset (after_fork_child)."""
    return os.getpid() == _pid


def flush_due(now_ns):
    """True when the heartbeat's flush is due (_FLUSH_NS after the last)."""
    return now_ns - _last_flush >= _FLUSH_NS
