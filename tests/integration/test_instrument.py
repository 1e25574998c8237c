"""sonde instrument and sonde clean on a copy of standard-library modules
(json/decoder.py, textwrap.py, fractions.py of the Python running this test)
and on small modules of every awkward kind (decorators, a property, async def,
nested defs, a latin-1 coding line, tabs with CRLF and no final line end, a
byte order mark), in a temporary directory: clean gives every file back byte
for byte; the instrumented code still runs, without the sonde module, with it,
and under every CPython here; under `sonde run` each call is a region of the
report (skipped where sonde's NVTX agent, libsonde_cuda.so, was not built);
a file edited since is refused unless --force; a missing function, a file
without write permission and a link out of the tree are refused with nothing
changed."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import SONDE, check, cpython_exes, main, scratch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY_MODULE_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))
AGENT = os.path.join(os.path.dirname(os.path.abspath(SONDE)), "libsonde_cuda.so")
MARK = "# [PROFILE]"

ZOO_SPACES = (
    b"# -*- coding: latin-1 -*-\n"
    b'"""Zoo: decorators, a property, async, nested defs."""\n'
    b"from __future__ import annotations\n"
    b"import asyncio\n"
    b"import functools\n"
    b"\n"
    b'NAME = "caf\xe9"\n'
    b"\n"
    b"\n"
    b"class Shop:\n"
    b"    @staticmethod\n"
    b"    @functools.lru_cache(\n"
    b"        maxsize=None)\n"
    b"    def price(n):\n"
    b"        return n * 2\n"
    b"\n"
    b"    @property\n"
    b"    def name(self):\n"
    b"        return NAME\n"
    b"\n"
    b"    async def fetch(self, n):\n"
    b"        await asyncio.sleep(0)\n"
    b"        return n + 1\n"
    b"\n"
    b"\n"
    b"def outer(n):\n"
    b"    def inner(k):\n"
    b"        return k * 3\n"
    b"    return inner(n)\n")
ZOO_TABS = (b"class Tabbed:\r\n\tdef twice(self, x):\r\n\t\treturn 2 * x\r\n\r\n"
            b"def last(x):\r\n\treturn x - 1")
ZOO_BOM = b"\xef\xbb\xbfdef first():\n    return 'bom'\n"

SPECS = ["json/decoder.py:JSONDecoder.decode", "textwrap.py:dedent",
         "fractions.py:Fraction.from_float", "zoo_spaces.py:Shop.price",
         "zoo_spaces.py:Shop.name", "zoo_spaces.py:Shop.fetch",
         "zoo_spaces.py:outer.inner", "zoo_spaces.py:outer", "zoo_tabs.py:Tabbed.twice",
         "zoo_tabs.py:last", "zoo_bom.py:first"]

# Calls every instrumented function and prints what they return, one JSON line.
USE = r'''
import asyncio, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import json.decoder, textwrap, fractions, zoo_spaces, zoo_tabs, zoo_bom
here = os.path.dirname(os.path.abspath(__file__))
for m in (json.decoder, textwrap, fractions, zoo_spaces):
    assert m.__file__.startswith(here), m.__file__
calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for i in range(calls):
    doc = json.loads('{"a": [1, 2, %d]}' % i)
for i in range(3):
    text = textwrap.dedent("    x\n    y\n")
shop = zoo_spaces.Shop()
print(json.dumps([doc, text, str(fractions.Fraction.from_float(0.5)),
                  zoo_spaces.Shop.price(2), shop.name, asyncio.run(shop.fetch(1)),
                  zoo_spaces.outer(2), zoo_tabs.Tabbed().twice(4), zoo_tabs.last(1),
                  zoo_bom.first(), getattr(sys.modules.get("sonde"), "active", None)]))
'''

# The zoo's functions under another CPython: what they return, and whether
# any was wrapped (without sonde, or sonde not recording, none may be).
ZOO_USE = r'''
import asyncio, json, sys
sys.path.insert(0, ".")
import zoo_spaces, zoo_tabs, zoo_bom
shop = zoo_spaces.Shop()
fns = [zoo_spaces.Shop.price.__wrapped__, zoo_spaces.Shop.name.fget, zoo_spaces.Shop.fetch,
       zoo_spaces.outer, zoo_tabs.Tabbed.twice, zoo_tabs.last, zoo_bom.first]
print(json.dumps([zoo_spaces.Shop.price(2), shop.name, asyncio.run(shop.fetch(1)),
                  zoo_spaces.outer(2), zoo_tabs.Tabbed().twice(4), zoo_tabs.last(1),
                  zoo_bom.first(), [hasattr(f, "__wrapped__") for f in fns]]))
'''


def run(args, cwd, env=None, timeout=300):
    full = dict(os.environ)
    full["PYTHONDONTWRITEBYTECODE"] = "1"
    full.pop("PYTHONPATH", None)
    full.update(env or {})
    return subprocess.run(args, cwd=cwd, env=full, timeout=timeout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, errors="replace")


def sonde_in(cwd, *args, env=None):
    return run([os.path.abspath(SONDE), *args], cwd, env)


def tree_copy(name):
    """A scratch directory holding copies of json/, textwrap.py, fractions.py
    and the zoo modules, and the script that calls them."""
    d = scratch(name)
    lib = os.path.dirname(json.__file__)
    shutil.copytree(lib, os.path.join(d, "json"), ignore=shutil.ignore_patterns("__pycache__"))
    stdlib = os.path.dirname(lib)
    for mod in ("textwrap.py", "fractions.py"):
        shutil.copy(os.path.join(stdlib, mod), d)
    for mod, data in (("zoo_spaces.py", ZOO_SPACES), ("zoo_tabs.py", ZOO_TABS),
                      ("zoo_bom.py", ZOO_BOM)):
        with open(os.path.join(d, mod), "wb") as f:
            f.write(data)
    with open(os.path.join(d, "use.py"), "w") as f:
        f.write(USE)
    return d


def snapshot(d):
    """Every file's bytes (a link's target) by path, profile_output left out."""
    out = {}
    for root, dirs, files in os.walk(d):
        dirs[:] = [x for x in dirs if x != "profile_output"]
        for name in files:
            p = os.path.join(root, name)
            rel = os.path.relpath(p, d)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p))
            else:
                with open(p, "rb") as f:
                    out[rel] = f.read()
    return out


def differing(a, b):
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def manifest(d):
    with open(os.path.join(d, "profile_output", "instrument.json")) as f:
        return json.load(f)


def instrumented(name):
    """(dir, snapshot before, snapshot after) of a tree with every SPEC
    instrumented."""
    d = tree_copy(name)
    before = snapshot(d)
    p = sonde_in(d, "instrument", *SPECS)
    assert p.returncode == 0, p.stderr
    return d, before, snapshot(d)


@check("instrument then clean leaves every file of the copied standard-library tree byte for "
       "byte as it was, and each inserted line ends with the mark")
def round_trip():
    d, before, after = instrumented("instr-round-trip")
    changed = differing(before, after)
    assert changed == sorted(["json/decoder.py", "textwrap.py", "fractions.py",
                              "zoo_spaces.py", "zoo_tabs.py", "zoo_bom.py"]), changed
    for rel in changed:
        bom = b"\xef\xbb\xbf"
        old = before[rel][3 if before[rel].startswith(bom) else 0:].splitlines(True)
        new = after[rel][3 if after[rel].startswith(bom) else 0:].splitlines(True)
        added = [x for x in new if x not in old]
        assert len(new) > len(old) and all(x.rstrip(b"\r\n").endswith(MARK.encode())
                                           for x in added), (rel, added)
    m = manifest(d)
    entry = {e["path"]: e for e in m["files"]}["zoo_tabs.py"]
    assert all(line["text"].startswith(("\t", "@", "try", "except")) for line in entry["lines"])
    assert b"\t@_sonde_region(\"zoo_tabs.py:Tabbed.twice\")  # [PROFILE]\r\n" in \
        after["zoo_tabs.py"], after["zoo_tabs.py"]
    assert after["zoo_bom.py"].startswith(b"\xef\xbb\xbftry:")
    p = sonde_in(d, "clean")
    assert p.returncode == 0, p.stderr
    assert not differing(before, snapshot(d)), differing(before, snapshot(d))
    assert not os.path.exists(os.path.join(d, "profile_output", "instrument.json"))


@check("the instrumented code still runs and returns the same, without the sonde module and "
       "with it (no function wrapped when not recording), under every CPython here")
def still_runs():
    d = tree_copy("instr-runs-plain")
    plain = run([sys.executable, "use.py"], d)
    assert plain.returncode == 0, plain.stderr
    d, _, after = instrumented("instr-runs")
    without = run([sys.executable, "use.py"], d)
    assert without.returncode == 0, without.stderr
    assert without.stdout == plain.stdout, (without.stdout, plain.stdout)
    with_module = run([sys.executable, "use.py"], d, {"PYTHONPATH": PY_MODULE_DIR})
    assert with_module.returncode == 0, with_module.stderr
    assert json.loads(with_module.stdout)[:-1] == json.loads(plain.stdout)[:-1]
    assert json.loads(with_module.stdout)[-1] is False, with_module.stdout
    pythons, missing = cpython_exes()
    for reason in missing:
        print("skip: " + reason)
    want = [4, "caf\u00e9", 2, 6, 8, 0, "bom", [False] * 7]
    for label, exe in pythons + [("this python", sys.executable)]:
        for env in ({}, {"PYTHONPATH": PY_MODULE_DIR}):
            p = run([exe, "-c", ZOO_USE], d, env)
            assert p.returncode == 0, (label, env, p.stderr)
            assert json.loads(p.stdout) == want, (label, env, p.stdout)


@check("under sonde run each call of an instrumented function is a region, a phase named "
       "FILE:FUNCTION, and Part B lists the instrumented files")
def regions_in_run():
    if not os.path.exists(AGENT):
        print("skip: libsonde_cuda.so was not built (no CUPTI headers at configure time)")
        return
    d, _, _ = instrumented("instr-run")
    env_run = {k: v for k, v in os.environ.items()
               if k not in ("SONDE_CUDA_FORCE", "CUDA_INJECTION64_PATH",
                            "NVTX_INJECTION64_PATH", "SONDE_CUDA_AGENT")}
    env_run["PYTHONPATH"] = PY_MODULE_DIR
    env_run["PYTHONDONTWRITEBYTECODE"] = "1"
    p = subprocess.run([os.path.abspath(SONDE), "run", "-q", "-o", "run", "--", sys.executable,
                        "use.py", "5"], cwd=d, env=env_run, timeout=600,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout.splitlines()[-1])[-1] is True, p.stdout
    with open(os.path.join(d, "run", "report.json")) as f:
        r = json.load(f)
    names = [ph["name"] for ph in r.get("phases") or []]
    counts = {n: names.count(n) for n in set(names)}
    assert counts.get("json/decoder.py:JSONDecoder.decode") == 5, counts
    assert counts.get("textwrap.py:dedent") == 3, counts
    assert counts.get("zoo_spaces.py:Shop.fetch") == 1, counts
    for ph in r["phases"]:
        assert ph["origin"] == "nvtx" and ph["duration_s"] >= 0, ph
    rows = {row["file"]: row for row in r.get("changelog") or []}
    assert "json/decoder.py" in rows and MARK in rows["json/decoder.py"]["what"], rows
    assert rows["json/decoder.py"]["lines"], rows


@check("clean refuses a file edited since in one line and leaves it; --force removes only the "
       "lines still marked exactly as inserted, keeping the edit")
def edited_since():
    d, before, after = instrumented("instr-edited")
    path = os.path.join(d, "textwrap.py")
    edited = after["textwrap.py"] + b"EDITED = 1\n"
    changed_mark = b'@_sonde_region("textwrap.py:dedent")  # [PROFILE]\n'
    assert changed_mark in edited
    edited = edited.replace(changed_mark, b'@_sonde_region("mine")  # [PROFILE]\n')
    with open(path, "wb") as f:
        f.write(edited)
    p = sonde_in(d, "clean")
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "textwrap.py was edited since" in lines[0], p.stderr
    now = snapshot(d)
    assert now["textwrap.py"] == edited
    assert not differing({k: v for k, v in before.items() if k != "textwrap.py"},
                         {k: v for k, v in now.items() if k != "textwrap.py"})
    assert [e["path"] for e in manifest(d)["files"]] == ["textwrap.py"]
    p = sonde_in(d, "clean", "--force")
    assert p.returncode == 0, p.stderr
    assert "1 line marked" in p.stdout, p.stdout
    want = before["textwrap.py"].replace(b"\ndef dedent(",
                                         b'\n@_sonde_region("mine")  # [PROFILE]\ndef dedent(')
    assert snapshot(d)["textwrap.py"] == want + b"EDITED = 1\n"
    assert not os.path.exists(os.path.join(d, "profile_output", "instrument.json"))


@check("a function that does not exist, a module named instead of its file, or a file "
       "without write permission is a clear error and no file changes")
def refusals():
    d = tree_copy("instr-refused")
    before = snapshot(d)
    p = sonde_in(d, "instrument", "textwrap.py:dedent", "json/decoder.py:JSONDecoder.decod")
    assert p.returncode == 1, p.stderr
    assert "no function JSONDecoder.decod" in p.stderr and "did you mean JSONDecoder.decode" \
        in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not differing(before, snapshot(d))
    assert not os.path.exists(os.path.join(d, "profile_output", "instrument.json"))
    p = sonde_in(d, "instrument", "json.decoder:JSONDecoder.decode")
    assert p.returncode == 1 and "takes a file: path/to/module.py:FUNCTION" in p.stderr, p.stderr
    os.chmod(os.path.join(d, "textwrap.py"), 0o444)
    p = sonde_in(d, "instrument", "zoo_bom.py:first", "textwrap.py:dedent")
    assert p.returncode == 1 and "textwrap.py is not writable" in p.stderr, p.stderr
    assert not differing(before, snapshot(d))


@check("a symbolic link out of the current directory is refused; one inside it is followed, "
       "the link stays a link, and clean restores its file")
def symlinks():
    top = scratch("instr-links")
    proj, outside = os.path.join(top, "proj"), os.path.join(top, "outside")
    os.makedirs(proj)
    os.makedirs(outside)
    src = b"def f():\n    return 1\n"
    for p in (os.path.join(proj, "inside.py"), os.path.join(outside, "real.py")):
        with open(p, "wb") as f:
            f.write(src)
    os.symlink("../outside/real.py", os.path.join(proj, "link_out.py"))
    os.symlink("inside.py", os.path.join(proj, "link_in.py"))
    p = sonde_in(proj, "instrument", "link_out.py:f")
    assert p.returncode == 1 and "outside the current directory" in p.stderr, p.stderr
    with open(os.path.join(outside, "real.py"), "rb") as f:
        assert f.read() == src
    p = sonde_in(proj, "instrument", "link_in.py:f")
    assert p.returncode == 0, p.stderr
    assert os.path.islink(os.path.join(proj, "link_in.py"))
    with open(os.path.join(proj, "inside.py"), "rb") as f:
        assert MARK.encode() in f.read()
    p = sonde_in(proj, "clean")
    assert p.returncode == 0, p.stderr
    with open(os.path.join(proj, "inside.py"), "rb") as f:
        assert f.read() == src


if __name__ == "__main__":
    main()
