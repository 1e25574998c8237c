"""PyTorch on the CPU (tests/workloads/torch_train_planted.py, a small
classifier trained with a DataLoader): torch operators are listed under the
program's line that called them, and the three planted problems are findings
at their lines: a Python loop over a batch's rows (augment), a DataLoader whose
workers starve the step (SensorWindows.__getitem__) and torch.set_num_threads(8)
on a machine with fewer CPUs. The same training with --fixed has none of them."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sonde_test import check, main, run_profile, skip  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.abspath(os.path.join(HERE, "..", "workloads", "torch_train_planted.py"))


def torch_python():
    """The first Python that imports torch: Debian's python3-torch runs
    with /usr/bin/python3."""
    why = []
    for exe in ("/usr/bin/python3", sys.executable):
        if not exe or not os.access(exe, os.X_OK):
            continue
        p = subprocess.run([exe, "-c", "import torch"], capture_output=True, text=True,
                           timeout=120)
        if p.returncode == 0:
            return exe
        why.append(f"{exe}: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
    skip("no Python here imports torch (apt-get install python3-torch): " + "; ".join(why))


EXE = torch_python()
if (os.cpu_count() or 1) >= 8:
    skip(f"{os.cpu_count()} CPUs: torch.set_num_threads(8) does not oversubscribe them")


def profile(name, *args):
    # the training lasts seconds where a real one lasts minutes: 199 Hz gives
    # the row loop (about 0.2 s of CPU) twice the samples of the default rate,
    # well clear of the finding's 10-sample floor on a loaded machine
    p, d, r = run_profile(name, [EXE, TRAIN, "--samples", "2560", *args], "--rate", "199")
    assert p.returncode == 0 and r, (p.returncode, p.stderr[-1500:])
    return r


def finding(r, fid):
    """The finding with this id, or the one it was merged into."""
    for f in r["findings"] + r.get("more_findings", []):
        if f["id"] == fid or any(a["id"] == fid for a in f.get("also") or []):
            return f
    return None


planted = profile("torch-planted")
fixed = profile("torch-fixed", "--fixed")
IDS = ("cpu.torch_row_loop", "concurrency.torch_dataloader_starved",
       "concurrency.torch_oversubscribed")


@check("torch operators are listed under the program's own line that called them")
def _():
    ops = planted["torch"]["operators"]
    assert ops, planted["torch"]
    assert all(o["file"] == TRAIN for o in ops), [o["file"] for o in ops]
    names = {o["operator"] for o in ops}
    assert any(n.startswith("aten::") for n in names), names
    assert any(o["function"] == "augment" for o in ops), ops


@check("the per-row loop is a finding at its `for` line in augment, with vectorising advice")
def _():
    f = finding(planted, "cpu.torch_row_loop")
    assert f, [x["id"] for x in planted["findings"]]
    assert f["location"].startswith(TRAIN + ":augment:"), f["location"]
    line = int(f["location"].rsplit(":", 1)[1])
    with open(TRAIN) as src:
        assert src.read().splitlines()[line - 1].strip().startswith("for i in range("), line
    assert "Vectorise" in f["next_step"] and "dim=1" in f["next_step"], f["next_step"]


@check("the starved DataLoader is a finding at the dataset's __getitem__, naming the loop that waits")
def _():
    f = finding(planted, "concurrency.torch_dataloader_starved")
    assert f, [x["id"] for x in planted["findings"]]
    assert "SensorWindows.__getitem__" in f["location"], f["location"]
    assert ":train:" in f["evidence"] and "num_workers" in f["next_step"], f
    assert planted["torch"]["dataloader"]["wait_share_pct"] >= 20, planted["torch"]["dataloader"]


@check("torch.set_num_threads(8) on fewer CPUs is a finding at the call's line")
def _():
    f = finding(planted, "concurrency.torch_oversubscribed")
    assert f, [x["id"] for x in planted["findings"]]
    loc = f["location"]
    assert loc.startswith(TRAIN + ":train:"), loc
    with open(TRAIN) as src:
        assert "set_num_threads(8)" in src.read().splitlines()[int(loc.rsplit(":", 1)[1]) - 1]
    assert "torch.set_num_threads(" in f["next_step"], f["next_step"]


@check("the fixed training has none of the three findings")
def _():
    assert "torch" in fixed, sorted(fixed)
    found = [fid for fid in IDS if finding(fixed, fid)]
    assert not found, [(x["id"], x["title"]) for x in fixed["findings"]]


main()
