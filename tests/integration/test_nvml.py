"""nvml probe, end to end: with a fake libnvidia-ml (SONDE_FAKE_NVML, built
from tests/fakes/fake_nvml.c) `sonde run` records its devices, topology,
samples and the target's GPU memory; without the library the run goes on and
says so in one line, without a warning."""
import json
import os

from sonde_test import check, db, env_set, main, run_profile, scratch, skip, sonde

FAKE = os.environ.get("SONDE_FAKE_NVML", "build/libfake_nvml.so")
if not os.path.exists(FAKE):
    skip(f"the fake NVML library {FAKE} is not built")


def run_with(env, name, command):
    d = os.path.join(scratch(name), "run")
    with env_set(env):
        p = sonde("run", "-o", d, "--", *command)
    return p, d


@check("without libnvidia-ml the run succeeds, the probes table says there is no NVIDIA "
       "driver, and no warning is printed")
def _():
    p, d = run_with({"SONDE_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"}, "nvml-none",
                    ["true"])
    assert p.returncode == 0, p.stderr
    row = db(d).execute("SELECT status, reason FROM probes WHERE name='nvml'").fetchone()
    assert row and row[0] == "unavailable", row
    assert row[1].startswith("no NVIDIA driver here") and "\n" not in row[1], row
    # The summary may list it among what is off ("off: nvml (...)"); no log line warns.
    printed = p.stdout + p.stderr
    assert "nvml probe off" not in printed and "sonde[nvml]" not in printed, printed
    assert os.path.exists(os.path.join(d, "report.md"))


@check("with the fake driver the recording holds its two devices, NV4 between them, "
       "samples of both and the target's GPU memory")
def _():
    pid_file = os.path.join(scratch("nvml-pid"), "pid")
    p, d = run_with({"SONDE_NVML_LIB": os.path.abspath(FAKE), "FAKE_NVML_PID_FILE": pid_file},
                    "nvml-fake", ["sh", "-c", f"echo $$ > {pid_file}; sleep 0.5"])
    assert p.returncode == 0, p.stderr
    pid = int(open(pid_file).read())
    c = db(d)
    assert c.execute("SELECT status FROM probes WHERE name='nvml'").fetchone() == ("on",)
    names = [r[0] for r in c.execute("SELECT name FROM nvml_devices ORDER BY device")]
    assert names == ["Sonde Fake GPU 0", "Sonde Fake GPU 1"], names
    topo = dict(((a, b), link) for a, b, link in c.execute("SELECT a, b, link FROM nvml_topology"))
    assert topo == {(0, 0): "X", (0, 1): "NV4", (1, 0): "NV4", (1, 1): "X"}, topo
    for dev, sm, tx in ((0, 50, 1000), (1, 51, 1001)):
        n = c.execute("SELECT count(*) FROM nvml_samples WHERE device=? AND sm_pct=? AND "
                      "pcie_tx_kbps=?", (dev, sm, tx)).fetchone()[0]
        assert n >= 2, (dev, n)
    rows = c.execute("SELECT DISTINCT pid, bytes FROM nvml_proc_memory").fetchall()
    assert rows == [(pid, 123456789)], rows
    assert os.path.exists(os.path.join(d, "report.md"))


@check("sonde doctor with the fake driver sees its two GPUs and NV4 between them, and "
       "without a driver says so with a fix")
def _():
    with env_set({"SONDE_NVML_LIB": os.path.abspath(FAKE)}):
        p = sonde("doctor", "--json")
    assert p.returncode == 0, p.stderr
    facts = {f["key"]: f for f in json.loads(p.stdout)["facts"]}
    assert facts["nvml"]["status"] == "ok" and "2 GPUs" in facts["nvml"]["fact"], facts
    topo = facts.get("gpu_topology")
    assert topo and topo["value"] == "0-1 NV4", facts
    with env_set({"SONDE_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"}):
        p = sonde("doctor")
    line = [x for x in p.stdout.splitlines() if "NVML" in x]
    assert line and line[0].startswith("limited") and "not found" in line[0], p.stdout
    assert "gpu_topology" not in p.stdout and "GPU topology" not in p.stdout, p.stdout
    after = p.stdout.splitlines()[p.stdout.splitlines().index(line[0]) + 1]
    assert after.strip().startswith("fix:"), p.stdout


main()
