"""GPU checks beside acceptance.py, for a machine with an NVIDIA GPU and
PyTorch (CUDA): run as `python3 tests/gpu/check_transfers.py SONDE`.

- A job written the way data-loading code often is: each step copies a large
  float32 batch from pinned host memory and waits for it before computing,
  so the copies (longer than the step's kernels) are on the step's path
  (`interconnect.transfer_bound`, located in copy_step). `--fixed` sends the
  batch as bfloat16 (half the bytes) and prefetches the next one on a side
  stream while the current one computes: no such finding.
- report.json's interconnect.links names the host-device link with a peak
  and the copies' achieved bandwidth.
- trace.json parses, has a GPU process with kernel and copy slices, and
  launch arrows (flow events) from the host's CUDA calls.

Prints PASS/FAIL per check and a SUMMARY line; exits 1 when a check failed,
77 when there is no GPU."""
import json
import os
import subprocess
import sys
import tempfile

PY = sys.executable
failed = 0

JOB = r'''
import sys, time, torch
fixed = "--fixed" in sys.argv
dev = torch.device("cuda")
STEPS, N = 150, 64 * 1024 * 1024  # 256 MiB of float32 per batch
dtype = torch.bfloat16 if fixed else torch.float32  # the fix sends half the bytes
host = [torch.randn(N).to(dtype).pin_memory() for _ in range(2)]
w = torch.randn(4096, 4096, device=dev)
x = torch.randn(4096, 4096, device=dev)


def step(batch):
    y = torch.tanh(x @ w)
    return y.add_(batch[:1].float().sum())


def copy_step(i):
    batch = host[i % 2].to(dev, non_blocking=True)
    torch.cuda.current_stream().synchronize()  # planted: copy, wait, then compute
    return batch


def train_blocking():
    for i in range(STEPS):
        step(copy_step(i))
    torch.cuda.synchronize()


def train_prefetch():
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        nxt = host[0].to(dev, non_blocking=True)
    for i in range(STEPS):
        torch.cuda.current_stream().wait_stream(side)
        batch = nxt
        batch.record_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            nxt = host[(i + 1) % 2].to(dev, non_blocking=True)
        step(batch)
    torch.cuda.synchronize()


t0 = time.monotonic()
(train_prefetch if fixed else train_blocking)()
print("elapsed %.3f s" % (time.monotonic() - t0))
'''


def check(name, ok, detail=""):
    global failed
    print(("PASS" if ok else "FAIL") + ": " + name + (" (" + detail + ")" if detail else ""),
          flush=True)
    failed += 0 if ok else 1


def run(sonde, tmp, name, *args):
    job = os.path.join(tmp, "copy_job.py")
    with open(job, "w") as f:
        f.write(JOB)
    out = os.path.join(tmp, name)
    cmd = [sonde, "run", "-o", out, "--force", "--", PY, job, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print("$ " + " ".join(cmd) + f"  -> {p.returncode}", flush=True)
    if p.returncode:
        print(p.stdout[-2000:], p.stderr[-2000:])
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f), out, job


def ids(rep):
    out = []
    for f in rep.get("findings", []) + rep.get("more_findings", []):
        out.append((f["id"], f.get("location", "")))
        out += [(a["id"], f.get("location", "")) for a in f.get("also") or []]
    return out


def main():
    sonde = sys.argv[1]
    probe = subprocess.run([PY, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        print("SKIP: no CUDA GPU visible to PyTorch here")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="sonde-gpu-copies-")
    rep, out, job = run(sonde, tmp, "blocking")
    summary = {"interconnect": rep.get("interconnect"),
               "compute": (rep.get("gpu") or {}).get("compute"),
               "findings": ids(rep)}
    tb = [loc for i, loc in ids(rep) if i == "interconnect.transfer_bound"]
    check("interconnect.transfer_bound found at copy_step", any(":copy_step:" in l for l in tb),
          json.dumps(summary["findings"]))
    links = (rep.get("interconnect") or {}).get("links") or []
    check("interconnect.links has a host-device link with a peak and a bandwidth",
          any(l.get("peak_gb_per_s") and l.get("achieved_gb_per_s") for l in links),
          json.dumps(links)[:1500])
    try:
        with open(os.path.join(out, "trace.json")) as f:
            tr = json.load(f)
        evs = tr["traceEvents"] if isinstance(tr, dict) else tr
        gpu_slices = [e for e in evs if e.get("ph") == "X" and e.get("pid", 0) >= 1000000000]
        cats = sorted({e.get("cat") for e in gpu_slices})
        flows = sum(1 for e in evs if e.get("ph") in ("s", "f"))
        summary["trace"] = {"events": len(evs), "gpu_slices": len(gpu_slices), "cats": cats,
                            "flows": flows}
        check("trace.json has GPU slices of kernels and copies, and launch arrows",
              len(gpu_slices) > 0 and len(cats) >= 2 and flows > 0, json.dumps(summary["trace"]))
    except (OSError, ValueError, KeyError) as e:
        check("trace.json parses", False, repr(e))
    rep2, _, _ = run(sonde, tmp, "prefetch", "--fixed")
    summary["fixed_findings"] = ids(rep2)
    summary["fixed_compute"] = (rep2.get("gpu") or {}).get("compute")
    check("no interconnect.transfer_bound when the next batch is prefetched",
          not any(i == "interconnect.transfer_bound" for i, _ in ids(rep2)),
          json.dumps(summary["fixed_findings"]))
    print("SUMMARY " + json.dumps(summary, default=str)[:6000])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
