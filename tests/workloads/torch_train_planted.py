"""Trains a small classifier of sensor windows on the CPU with PyTorch.

The planted variant has three problems a profiler should find at their lines:
- the dataset builds each window in pure Python in __getitem__, so the
  DataLoader's workers cannot keep up and the training loop waits for batches;
- the step augments and standardises the batch with a Python loop over its
  rows, where the same operations over the whole batch (dim=1) would do;
- torch.set_num_threads(8), hard-coded for an 8-core box, oversubscribes a
  smaller machine's cores, which the DataLoader workers share.

`--fixed` is the same training without them: windows made once, as tensors, in
__init__ (so batches are slices and need no worker processes); one batched
augmentation; intra-op threads for half the cores. Prints "epoch N loss X" once
per epoch, "done" at the end.
"""
import argparse
import math
import os
import random
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

WINDOW = 512
CLASSES = 4


class SensorWindows(Dataset):
    """Synthetic accelerometer windows: a sine of the class's frequency, noise."""

    def __init__(self, n, seed=0):
        self.n = n
        self.seed = seed
        self.labels = [(seed + i) % CLASSES for i in range(n)]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = random.Random(self.seed * 100003 + i)
        label = self.labels[i]
        freq = 1.0 + label
        window = []
        for t in range(WINDOW):
            x = math.sin(2 * math.pi * freq * t / WINDOW) + rng.gauss(0.0, 0.3)
            window.append(x)
        # a short moving average, as the sensor's firmware would
        smooth = []
        for t in range(WINDOW):
            lo = max(0, t - 4)
            smooth.append(sum(window[lo:t + 1]) / (t + 1 - lo))
        return torch.tensor(smooth, dtype=torch.float32), label


class PrecomputedWindows(Dataset):
    """The same windows, made once with tensor operations."""

    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.arange(seed, seed + n) % CLASSES
        t = torch.arange(WINDOW, dtype=torch.float32)
        freq = (1.0 + self.labels.float()).unsqueeze(1)
        wave = torch.sin(2 * math.pi * freq * t / WINDOW)
        wave += 0.3 * torch.randn(n, WINDOW, generator=g)
        kernel = torch.full((1, 1, 5), 0.2)
        self.windows = nn.functional.conv1d(wave.unsqueeze(1), kernel, padding=2).squeeze(1)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.windows[i], int(self.labels[i])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(WINDOW, 128), nn.ReLU(),
            nn.Linear(128, 128), nn.ReLU(),
            nn.Linear(128, CLASSES))

    def forward(self, x):
        return self.net(x)


def augment(batch):
    """A random circular shift and gain per window (the sensor's clock and
    amplification drift), then each window to zero mean and unit variance."""
    out = torch.empty_like(batch)
    for i in range(batch.shape[0]):
        row = batch[i]
        shift = int(torch.randint(0, WINDOW, (1,)))
        row = torch.roll(row, shift) * (0.8 + 0.4 * torch.rand(1))
        out[i] = (row - row.mean()) / (row.std() + 1e-5)
    return out


def augment_batched(batch):
    n = batch.shape[0]
    shifts = torch.randint(0, WINDOW, (n, 1))
    index = (torch.arange(WINDOW).unsqueeze(0) - shifts) % WINDOW
    rows = batch.gather(1, index) * (0.8 + 0.4 * torch.rand(n, 1))
    mean = rows.mean(dim=1, keepdim=True)
    std = rows.std(dim=1, keepdim=True)
    return (rows - mean) / (std + 1e-5)


def train(args):
    if args.fixed:
        # the windows are tensors in memory: batches are slices, no workers needed
        # a small model: half the cores for its operators, the rest for the machine
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
        data = PrecomputedWindows(args.samples)
        loader = DataLoader(data, batch_size=args.batch, shuffle=True)
        norm = augment_batched
    else:
        torch.set_num_threads(8)
        data = SensorWindows(args.samples)
        loader = DataLoader(data, batch_size=args.batch, shuffle=True,
                            num_workers=args.workers, persistent_workers=True)
        norm = augment
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        total = 0.0
        for x, y in loader:
            x = norm(x)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(loader):.4f}", flush=True)
    print("done", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixed", action="store_true")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--samples", type=int, default=3200)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    t0 = time.monotonic()
    train(args)
    print(f"took {time.monotonic() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
