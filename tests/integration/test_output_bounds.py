"""The target's output is never a burden: output.log and the recording stay
under --max-output with a note when the cap is reached, binary output is
counted rather than stored as lines, and all of it still reaches sonde's own
stdout unchanged."""
import hashlib
import os
import subprocess
import sys

from sonde_test import SONDE, check, db, main, scratch

MIB = 1 << 20

# Writes N lines of text, then prints nothing else; deterministic, so the
# expected bytes can be made here too.
TEXT = "import sys\nfor i in range(int(sys.argv[1])):\n    sys.stdout.write('line %08d ' % i + 'x' * 80 + '\\n')\n"
# Binary: a short text line, then bytes with NULs (a fixed pseudo-random stream).
BINARY = ("import sys, random\nr = random.Random(7)\nsys.stdout.write('header line\\n')\n"
          "sys.stdout.flush()\nsys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in "
          "range(int(sys.argv[1]))))\n")


def run_binary_stdout(name, script, arg, *options):
    """sonde run -q -o DIR OPTIONS -- python3 -c SCRIPT ARG, its stdout as bytes."""
    d = os.path.join(scratch(name), "run")
    p = subprocess.run([os.path.abspath(SONDE), "run", "-q", "-o", d, *options, "--",
                        sys.executable, "-c", script, str(arg)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    expect = subprocess.run([sys.executable, "-c", script, str(arg)], stdout=subprocess.PIPE,
                            check=True).stdout
    return p, d, expect


def notes(d):
    return [t for (t,) in db(d).execute("SELECT text FROM notes")]


def meta(d, key):
    row = db(d).execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else None


@check("8 MiB of output with --max-output 1m: output.log stays under 1 MiB, a note says the "
       "cap was reached, and sonde's stdout carries every byte unchanged")
def _():
    lines = 8 * MIB // 94
    p, d, expect = run_binary_stdout("cap", TEXT, lines, "--max-output", "1m")
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert hashlib.sha256(p.stdout).digest() == hashlib.sha256(expect).digest(), \
        (len(p.stdout), len(expect))
    size = os.path.getsize(os.path.join(d, "output.log"))
    assert 0.5 * MIB < size <= MIB, size
    capped = [n for n in notes(d) if "output cap" in n]
    assert capped, notes(d)
    assert meta(d, "output_capped") == 1 and meta(d, "output_bytes") == len(expect)
    stored = db(d).execute("SELECT count(*) FROM output_lines").fetchone()[0]
    assert meta(d, "output_lines") == stored and stored + meta(d, "output_lines_dropped") \
        == lines, (stored, meta(d, "output_lines_dropped"), lines)
    with open(os.path.join(d, "report.md")) as f:
        assert "output cap" in f.read()


@check("--max-output 0 stores no output at all, and the output still passes through")
def _():
    p, d, expect = run_binary_stdout("cap0", TEXT, 1000, "--max-output", "0")
    assert p.returncode == 0 and p.stdout == expect, p.stderr
    assert os.path.getsize(os.path.join(d, "output.log")) == 0


@check("binary output (xz-like bytes with NULs) is counted, not stored as lines: output.log "
       "keeps the text before it, a note gives the bytes, and stdout is unchanged")
def _():
    n = 4 * MIB
    p, d, expect = run_binary_stdout("binary", BINARY, n)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    assert p.stdout == expect, (len(p.stdout), len(expect))
    with open(os.path.join(d, "output.log"), "rb") as f:
        log = f.read()
    assert len(log) < 64 * 1024 and b"header line" in log, len(log)
    assert meta(d, "output_binary_bytes") >= n - 1024, meta(d, "output_binary_bytes")
    size = os.path.getsize(os.path.join(d, "profile.db"))
    assert size < 2 * MIB, size
    assert any("turned binary" in t for t in notes(d)), notes(d)


@check("--max-output refuses what is not a size, with a one-line error")
def _():
    p = subprocess.run([os.path.abspath(SONDE), "run", "--max-output", "lots", "--", "true"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--max-output" in p.stderr, \
        p.stderr


main()
