"""A headless Chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: commands on fd 3, replies and events on fd 4,
each a JSON message ending in a NUL byte), for the tests that load sonde's
HTML in a real browser: no websocket, nothing beyond the standard library.

    with Browser() as b:
        page = b.open("file:///.../report.html")
        b.call("Runtime.evaluate", {...}, page)

Browser() raises Unavailable when no chromium is installed."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


class Unavailable(Exception):
    pass


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, timeout_s=120):
        exe = chromium()
        if not exe:
            raise Unavailable("no chromium on PATH (Debian's chromium package)")
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="sonde-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def fds():
            # Through fds above both, as a pipe may already be 3 or 4 (and
            # dup2 onto itself would leave it close-on-exec).
            hi_r, hi_w = os.dup(cmd_r) + 16, os.dup(out_w) + 16
            os.dup2(cmd_r, hi_r)
            os.dup2(out_w, hi_w)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "--window-size=1300,1000", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=fds)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        self.events = []  # (session, method, params), every event seen
        self.contexts = {}  # (session, frameId) -> default execution context id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close", {})
        except Exception:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._cmd_w, self._out_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline):
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._out_r, 1 << 16)
            if not chunk:
                raise Unavailable("chromium closed its pipe (it did not start?)")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _note(self, m):
        s, method, p = m.get("sessionId"), m["method"], m.get("params", {})
        self.events.append((s, method, p))
        if method == "Runtime.executionContextCreated":
            aux = p["context"].get("auxData", {})
            if aux.get("isDefault"):
                self.contexts[(s, aux.get("frameId"))] = p["context"]["id"]

    def call(self, method, params, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            m = self._read(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self._note(m)

    def wait_event(self, method, session=None, timeout_s=None):
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        for s, name, p in self.events:
            if name == method and (session is None or s == session):
                return p
        while True:
            m = self._read(deadline)
            if "method" in m:
                self._note(m)
                if m["method"] == method and (session is None or m.get("sessionId") == session):
                    return m.get("params", {})

    def open(self, url):
        """A page session with url loaded (its load event fired), frames
        attached as they come, console and errors recorded in events."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        page = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(m, {}, page)
        self.call("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": False,
                                           "flatten": True}, page)
        self.call("Page.navigate", {"url": url}, page)
        self.wait_event("Page.loadEventFired", page)
        for s, name, p in list(self.events):  # out-of-process frames: their own sessions
            if name == "Target.attachedToTarget":
                for m in ("Runtime.enable", "Log.enable"):
                    self.call(m, {}, p["sessionId"])
        return page

    def evaluate(self, expr, session, context=None, await_promise=False):
        params = {"expression": expr, "returnByValue": True, "awaitPromise": await_promise}
        if context is not None:
            params["contextId"] = context
        r = self.call("Runtime.evaluate", params, session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def errors(self):
        """The console errors and uncaught exceptions seen, as text."""
        out = []
        for _, name, p in self.events:
            if name == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif name == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args"))[:500])
            elif name == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out

    def screenshot(self, session, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport":
                                                    False}, session)["data"]
        raw = base64.b64decode(data)
        with open(path, "wb") as f:
            f.write(raw)
        return raw

    def settle(self, session):
        """Returns after the page drew two frames (a scroll has reached the
        compositor, which routes clicks to out-of-process frames)."""
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))",
                      session, await_promise=True)

    def click(self, session, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                   "button": "left", "clickCount": 1}, session)
