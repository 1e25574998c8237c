"""The machine's hygiene facts in every run's report (report.json `hygiene`,
report.md's Machine line, the terminal only when something warns), read at
the run's start and end; SONDE_MACHINE_ROOT points sonde at fixture files."""
import json
import os
import subprocess

from sonde_test import SONDE, check, main, run_profile, scratch, sonde


@check("every run's report.json has hygiene with the cores and the load at the start")
def _():
    _, d, r = run_profile("hygiene", ["true"], expect_rc=0)
    h = r["hygiene"]
    assert h["cpus_online"] == os.sysconf("SC_NPROCESSORS_ONLN"), h
    assert h["load_1m_start"] >= 0 and h["load_1m_end"] >= 0, h
    assert isinstance(h["warnings"], list), h
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    assert "**Machine**: %d CPUs" % h["cpus_online"] in md, md[:800]
    # Near the top: before the first section.
    assert md.index("**Machine**") < md.index("# Part A"), md[:800]


@check("sonde report DIR writes the same hygiene again from the recording")
def _():
    _, d, r = run_profile("hygiene-again", ["true"], expect_rc=0)
    p = sonde("report", "-q", d)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(d, "report.json")) as f:
        again = json.load(f)
    assert again["hygiene"] == r["hygiene"], (again["hygiene"], r["hygiene"])


@check("a time slice's report keeps the run's hygiene, less the stall shares of the whole wall")
def _():
    _, d, r = run_profile("hygiene-slice", ["sleep", "0.3"], expect_rc=0)
    p = sonde("report", "-q", "--from", "0.1", d)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(d, "slices", "0.1s-end", "report.json")) as f:
        sliced = json.load(f)["hygiene"]
    whole = r["hygiene"]
    assert sliced["cpus_online"] == whole["cpus_online"], sliced
    assert sliced.get("steal_pct") == whole.get("steal_pct"), (sliced, whole)
    assert not [k for k in sliced if k.startswith("psi_")], sliced


def fixture(root, idle, steal, throttled):
    """A 2-CPU machine whose /proc/stat idle and steal ticks and cgroup
    nr_throttled are given; the command under sonde writes the end values."""
    files = {
        "proc/loadavg": "0.10 0.10 0.10 1/100 99\n",
        "proc/stat": "cpu  100 0 50 %d 10 0 0 %d 0 0\n" % (idle, steal),
        "proc/self/cgroup": "0::/t\n",
        "sys/fs/cgroup/t/cpu.max": "100000 100000\n",
        "sys/fs/cgroup/t/cpu.stat": "nr_throttled %d\nthrottled_usec %d\n"
                                    % (throttled, throttled * 1000),
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
        "sys/devices/system/cpu/cpu1/online": "1\n",
    }
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def run_on_fixture(name, end_idle, end_steal, end_throttled):
    """sonde run (not quiet) of a command that moves the fixture's counters;
    returns (stderr, report, report.md)."""
    base = scratch(name)
    start, end = os.path.join(base, "start"), os.path.join(base, "end")
    fixture(start, 800, 40, 3)
    fixture(end, end_idle, end_steal, end_throttled)
    d = os.path.join(base, "run")
    # The command plays the run: the counters move while it runs.
    cmd = "cp %s/proc/stat %s/proc/stat && cp %s/sys/fs/cgroup/t/cpu.stat %s/sys/fs/cgroup/t/" % (
        end, start, end, start)
    env = dict(os.environ, SONDE_MACHINE_ROOT=start)
    p = subprocess.run([os.path.abspath(SONDE), "run", "-o", d, "--", "sh", "-c", cmd],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    with open(os.path.join(d, "report.json")) as f:
        r = json.load(f)
    with open(os.path.join(d, "report.md")) as f:
        md = f.read()
    return p.stderr, r, md


@check("steal and cgroup throttling that moved during the run warn in report.json, report.md "
       "and the terminal")
def _():
    err, r, md = run_on_fixture("hygiene-moved", 1600, 240, 8)
    h = r["hygiene"]
    assert h["cpus_online"] == 2, h
    assert abs(h["steal_pct"] - 20.0) < 1e-6, h  # 200 of 1000 ticks
    assert h["cgroup_throttled_count"] == 5, h
    ids = [w["id"] for w in h["warnings"]]
    assert "steal" in ids and "cgroup_throttle" in ids, ids
    steal = [w["text"] for w in h["warnings"] if w["id"] == "steal"][0]
    assert "20.0%" in steal and "wall times" in steal, steal
    assert "> **Warning**: the hypervisor gave 20.0%" in md, md[:1500]
    assert "machine the hypervisor gave 20.0%" in err, err
    assert "machine the cgroup's CPU quota stopped the program 5 times" in err, err


@check("a run on a quiet machine says nothing about the machine on the terminal")
def _():
    err, r, md = run_on_fixture("hygiene-quiet", 1800, 40, 3)
    assert r["hygiene"]["warnings"] == [], r["hygiene"]
    assert r["hygiene"]["steal_pct"] == 0, r["hygiene"]
    assert "hypervisor" not in err and "quota" not in err, err
    assert "**Machine**: 2 CPUs" in md and "Warning" not in md.split("# Part A")[0], md[:800]


if __name__ == "__main__":
    main()
