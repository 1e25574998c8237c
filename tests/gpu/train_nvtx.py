"""A small PyTorch training loop annotated with NVTX the usual way:
torch.cuda.nvtx.range_push/range_pop around the forward pass and around the
backward pass of each step; the optimizer step and the data are outside both
ranges. tests/gpu/acceptance.py runs it under sonde and checks the GPU time
per NVTX range (docs/gpu.md): both ranges have GPU time, and together they
hold the run's kernel time less what was launched outside them. The last
line printed is {"elapsed_s": ...}.
"""
import json
import time

import torch
import torch.nn.functional as F

DIM, HIDDEN, BATCH, STEPS = 2048, 4096, 1024, 60


def main():
    device = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(DIM, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, DIM, device=device)
    y = torch.randint(0, 10, (BATCH,), device=device)
    torch.cuda.synchronize()
    t0 = time.monotonic()
    for _ in range(STEPS):
        torch.cuda.nvtx.range_push("forward")
        loss = F.cross_entropy(model(x), y)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        loss.backward()
        torch.cuda.nvtx.range_pop()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print(json.dumps({"loss": float(loss)}))
    print(json.dumps({"elapsed_s": time.monotonic() - t0}), flush=True)


if __name__ == "__main__":
    main()
