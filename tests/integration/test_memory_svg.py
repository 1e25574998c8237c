"""memory.svg: the heap live at its peak, as a flame graph of allocating stacks."""
import os

from sonde_test import check, main, run_profile, workload


@check("with --memory=full, memory.svg shows the peak's allocating functions with their bytes")
def _():
    _, d, r = run_profile("memsvg", [workload("alloc_known")], "--memory=full", expect_rc=0)
    if "heap" not in r["memory"]:
        print("      (allocation tracker unavailable here: memory.svg cannot be made)")
        return
    path = os.path.join(d, "memory.svg")
    assert "memory.svg" in r["artifacts"] and os.path.exists(path), r["artifacts"]
    with open(path, encoding="utf-8") as f:
        svg = f.read()
    assert "big_transient" in svg and "MiB" in svg, "peak contributor or byte sizes missing"


@check("without --memory there is no memory.svg")
def _():
    _, d, r = run_profile("memsvg-off", ["true"], expect_rc=0)
    assert not os.path.exists(os.path.join(d, "memory.svg"))
    assert "memory.svg" not in r["artifacts"]


if __name__ == "__main__":
    main()
