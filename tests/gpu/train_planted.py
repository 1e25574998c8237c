"""A small PyTorch job written the way such jobs are often written, with three
problems planted where people plant them by accident:

- featurize(): a Python loop over the rows of a tensor, one handful of tiny
  kernels per row, where one batched expression would do (launch-bound GPU);
- train(): loss.item() every step for the log, which waits for the GPU, so
  that the host makes the next batch's noise while the GPU sits idle instead
  of while it computes (synchronisation);
- train(): the dataset and the noise in ordinary (pageable) host memory,
  copied with a plain .to(device) (pageable copies).

--fixed runs the same work without them: a batched featurize, the loss kept
on the GPU, the dataset and the noise in pinned memory, copied non_blocking.
--torch-profiler runs it under torch.profiler and prints the number of GPU
kernels and their total time as one JSON line (the reference sonde's cuda
agent is compared with). The last line printed is always
{"elapsed_s": ...} for the timed part.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

ROWS, DIM, BATCH, STEPS, HIDDEN, NOISE = 15000, 8192, 2048, 100, 8192, 1024
CHUNKS = 4  # batches in the host dataset, used in turn


def featurize(raw):
    feats = torch.empty_like(raw)
    for i in range(raw.shape[0]):
        row = raw[i]
        feats[i] = (row - row.mean()) / (row.std() + 1e-5)  # planted: per row
    return feats


def featurize_batched(raw):
    return (raw - raw.mean(dim=1, keepdim=True)) / (raw.std(dim=1, keepdim=True) + 1e-5)


def host_dataset(pinned):
    data = torch.linspace(-1, 1, CHUNKS * BATCH * DIM).reshape(CHUNKS * BATCH, DIM)
    return data.pin_memory() if pinned else data


def next_batch(data, step, gen, pinned):
    first = (step % CHUNKS) * BATCH
    x = data[first:first + BATCH]
    noise = torch.randn(BATCH, NOISE, generator=gen)  # augmentation, on the host
    return x, (noise.pin_memory() if pinned else noise)


def make_model(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(DIM, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, 2)).to(device)


def train(model, device, fixed):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    data = host_dataset(pinned=fixed)
    gen = torch.Generator().manual_seed(1)
    log = []
    total = torch.zeros((), device=device)
    for step in range(STEPS):
        x, noise = next_batch(data, step, gen, pinned=fixed)
        x, noise = x.to(device, non_blocking=fixed), noise.to(device, non_blocking=fixed)  # planted: pageable
        x[:, :NOISE] += noise
        y = (x[:, 0] > 0).long()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if fixed:
            total += loss.detach()
        else:
            log.append(loss.item())  # planted: sync
    if fixed:
        log.append(total.item() / STEPS)
    return log


def job(device, fixed):
    raw = torch.randn(ROWS, DIM, device=device)
    feats = featurize_batched(raw) if fixed else featurize(raw)
    model = make_model(device)
    log = train(model, device, fixed)
    torch.cuda.synchronize()
    return float(feats.sum()), log[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixed", action="store_true")
    ap.add_argument("--torch-profiler", action="store_true")
    args = ap.parse_args()
    device = torch.device("cuda")
    torch.zeros(1, device=device)  # the context, outside the timed part
    torch.cuda.synchronize()
    t0 = time.monotonic()
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            job(device, args.fixed)
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                   and not e.name.startswith(("Memcpy", "Memset"))]
        print(json.dumps({"torch_kernels": len(kernels),
                          "torch_kernel_s": sum(e.time_range.elapsed_us() for e in kernels) / 1e6}))
    else:
        job(device, args.fixed)
    print(json.dumps({"elapsed_s": time.monotonic() - t0}), flush=True)


if __name__ == "__main__":
    main()
