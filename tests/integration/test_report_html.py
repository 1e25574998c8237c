"""report.html in a real browser (headless Chromium through the DevTools
protocol, browser.py): for `python -m compileall` over a few standard-library
packages, a multi-threaded C program, and a Python program whose function is
called `<img src=x onerror=alert(1)>`, the page loads with no console error,
shows the findings, the flame graph and the timeline, a click on a frame of
the flame graph zooms it, and the hostile name is text: no element, no
script, no dialog. Skipped, with the reason, where no chromium is installed
(scripts/setup installs Debian's). Where Firefox is installed, its headless
screenshot of the page shows the flame graph drawn too (Firefox's console is
not read)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402
from pngread import coloured_rows_share, saturated_share  # noqa: E402
from sonde_test import check, main, run_profile, scratch, skip, workload  # noqa: E402

HOSTILE = "<img src=x onerror=alert(1)>"
PYTHON = shutil.which("python3")
if not browser.chromium():
    skip("no chromium on PATH: report.html not loaded in a browser (Debian's chromium package)")
if not PYTHON:
    skip("no python3 on PATH")

_runs = {}


def compileall_run():
    if "compileall" not in _runs:
        src = os.path.join(scratch("html-compileall"), "src")
        stdlib = subprocess.run([PYTHON, "-c", "import sysconfig;"
                                 "print(sysconfig.get_paths()['stdlib'])"],
                                capture_output=True, text=True, timeout=60).stdout.strip()
        for pkg in ("email", "json", "xml", "logging"):
            shutil.copytree(os.path.join(stdlib, pkg), os.path.join(src, pkg),
                            ignore=shutil.ignore_patterns("__pycache__", "test", "tests"))
        _runs["compileall"] = run_profile("html-compileall",
                                          [PYTHON, "-m", "compileall", "-q", "-f", src],
                                          expect_rc=0)[1]
    return _runs["compileall"]


def threads_run():
    if "threads" not in _runs:
        # 500 threads of 2 ms each, four at a time: creating, running and
        # joining them gives the flame graph frames of several widths
        _runs["threads"] = run_profile("html-threads",
                                       [workload("cpu_short_threads"), "500", "2"],
                                       expect_rc=0)[1]
    return _runs["threads"]


def hostile_run():
    if "hostile" not in _runs:
        prog = os.path.join(scratch("html-hostile"), "hostile.py")
        with open(prog, "w") as f:
            f.write("import time\n\n\ndef spin():\n    end = time.process_time() + 1.5\n"
                    "    x = 0\n    while time.process_time() < end:\n"
                    "        for i in range(20000):\n            x += i * i\n    return x\n\n\n"
                    f"code = spin.__code__.replace(co_name={HOSTILE!r})\n"
                    "if hasattr(code, 'co_qualname'):\n"
                    f"    code = code.replace(co_qualname={HOSTILE!r})\n"
                    "spin.__code__ = code\nspin()\n")
        _runs["hostile"] = run_profile("html-hostile", [PYTHON, prog], expect_rc=0)[1]
    return _runs["hostile"]


def frame_sessions(b):
    """{iframe title attribute: its session} of the page's flame graphs."""
    out = {}
    for s, name, p in b.events:
        if name == "Target.attachedToTarget":
            sid = p["sessionId"]
            title = b.evaluate("document.getElementById('title') ? "
                               "document.getElementById('title').textContent : ''", sid)
            out[title] = sid
    return out


def load(run):
    """(browser, page session) of run's report.html, loaded; the caller closes it."""
    path = os.path.join(run, "report.html")
    assert os.path.isfile(path), os.listdir(run)
    try:
        b = browser.Browser()
        page = b.open("file://" + os.path.abspath(path))
    except browser.Unavailable as e:
        skip(f"chromium cannot run here: {e}")
    return b, page


def page_checks(run, name):
    b, page = load(run)
    try:
        heads = b.evaluate("Array.from(document.querySelectorAll('h2')).map("
                           "h => h.textContent)", page)
        assert heads[:3] == ["Findings", "Flame graphs", "Timeline"], heads
        findings = b.evaluate("document.querySelectorAll('h3').length", page)
        charts = b.evaluate("document.querySelectorAll('svg.chart polyline').length", page)
        assert findings >= 1 and charts >= 2, (findings, charts)
        frames = frame_sessions(b)
        cpu = [s for t, s in frames.items() if t.startswith("On-CPU")]
        assert cpu, frames
        n_frames = b.evaluate("document.querySelectorAll('g.f').length", cpu[0])
        assert n_frames > 3, n_frames
        # the screenshot with the flame graph in view shows it drawn (its
        # colours; the page around it is grey and white)
        b.evaluate("document.querySelector('iframe[title=flame-cpu]').scrollIntoView("
                   "{block: 'end'})", page)  # the root is at the bottom
        b.settle(page)
        b.settle(cpu[0])  # the frame, in view now, draws (its own process's frames)
        b.settle(page)
        shot = os.path.join(scratch("html-shot-" + name), "report.png")
        share = saturated_share(b.screenshot(page, shot))
        assert share > 0.02, f"the flame graph is not drawn in {shot} ({share:.3f} coloured)"
        # a real click on the widest frame under the root zooms into it
        frame_box = b.evaluate("(() => { const r = document.querySelector("
                               "'iframe[title=flame-cpu]').getBoundingClientRect();"
                               " return [r.left, r.top]; })()", page)
        target = b.evaluate(
            "(() => { const gs = Array.from(document.querySelectorAll('g.f'))"
            ".filter(g => g.getAttribute('n') !== 'all' && parseFloat(g.getAttribute('fw')) < "
            "parseFloat(document.querySelector('svg').getAttribute('width')) * 0.9);"
            " gs.sort((a, b) => parseFloat(b.getAttribute('fw')) - "
            "parseFloat(a.getAttribute('fw')));"
            " const g = gs[0]; window.scrollTo(0, 0); if (!g) return null;"
            " const r = g.querySelector('rect').getBoundingClientRect();"
            " return [g.getAttribute('n'), r.left + r.width / 2, r.top + r.height / 2,"
            " r.width, parseFloat(document.querySelector('svg').getAttribute('width'))];"
            " })()", cpu[0])
        assert target and target[3] > 2, f"no frame narrower than the graph to click: {target}"
        vh = b.evaluate("window.innerHeight", page)
        y = frame_box[1] + target[2]
        if not 0 <= y < vh:  # the frame is below the window: bring it up
            b.evaluate(f"window.scrollBy(0, {y - vh / 2})", page)
            frame_box = b.evaluate("(() => { const r = document.querySelector("
                                   "'iframe[title=flame-cpu]').getBoundingClientRect();"
                                   " return [r.left, r.top]; })()", page)
        b.settle(page)
        b.click(page, frame_box[0] + target[1], frame_box[1] + target[2])
        zoomed = b.evaluate(
            "[!document.getElementById('unzoom').classList.contains('hide'),"
            " Array.from(document.querySelectorAll('g.f')).filter(g => g.getAttribute('n') === "
            + repr(target[0]).replace("'", '"') + ").map(g => parseFloat("
            "g.querySelector('rect').getAttribute('width')))]", cpu[0])
        # zoomed: the frame spans the graph's width (less its margins)
        assert zoomed[0] and max(zoomed[1]) > 0.9 * target[4], (target, zoomed)
        errors = b.errors()
        assert not errors, errors
        dialogs = [e for e in b.events if e[1] == "Page.javascriptDialogOpening"]
        assert not dialogs, dialogs
        return b, page
    except BaseException:
        b.close()
        raise


@check("compileall's report.html loads with no console error, shows the findings, the flame "
       "graph and the timeline, and a click on a frame zooms it")
def _():
    b, _ = page_checks(compileall_run(), "compileall")
    b.close()


@check("a multi-threaded C program's report.html does the same")
def _():
    b, _ = page_checks(threads_run(), "threads")
    b.close()


@check("a function called <img src=x onerror=alert(1)> is text in report.html: no element, no "
       "script, no dialog")
def _():
    run = hostile_run()
    with open(os.path.join(run, "report.html"), encoding="utf-8") as f:
        html = f.read()
    assert HOSTILE not in html, "the name is in the page unescaped"
    b, page = page_checks(run, "hostile")
    try:
        assert b.evaluate("document.querySelectorAll('img').length", page) == 0
        text = b.evaluate("document.body.textContent", page)
        assert HOSTILE in text, "the name is not shown"
        frames = frame_sessions(b)
        cpu = [s for t, s in frames.items() if t.startswith("On-CPU")][0]
        assert b.evaluate("document.querySelectorAll('img').length", cpu) == 0
        assert b.evaluate(f"Array.from(document.querySelectorAll('g.f')).some(g => "
                          f"g.getAttribute('n').includes({HOSTILE!r}))", cpu)
    finally:
        b.close()


@check("Firefox draws compileall's report.html, the flame graph in its frame included")
def _():
    firefox = shutil.which("firefox-esr") or shutil.which("firefox")
    if not firefox:
        print("note: no Firefox here (Debian's firefox-esr): not tried in Firefox")
        return
    run = compileall_run()
    d = scratch("html-firefox")
    shot = os.path.join(d, "report.png")
    os.makedirs(os.path.join(d, "profile"))
    subprocess.run([firefox, "--headless", "--no-remote", "--profile", os.path.join(d, "profile"),
                    "--window-size=1300,2400", "--screenshot", shot,
                    "file://" + os.path.abspath(os.path.join(run, "report.html"))],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)
    assert os.path.isfile(shot), "Firefox wrote no screenshot"
    # Firefox shoots the top of the page: a deep graph's narrow top frames
    # fill few pixels of it (1.5% in a loaded make check, its wide root out
    # of view) but colour most of its rows (47% there, 58% quiet); the same
    # page with its frames emptied colours none.
    with open(shot, "rb") as f:
        share = coloured_rows_share(f.read())
    assert share > 0.1, f"the flame graph is not drawn in {shot} ({share:.3f} of rows coloured)"


if __name__ == "__main__":
    main()
