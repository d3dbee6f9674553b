#!/usr/bin/python3
"""Time PyTorch training epochs for easeml's GPU check (scripts/gpu-check.sh).

    torch_epoch.py --model mlp|cnn --epochs E [--device cuda|cpu] [--rows N]

The same networks, batch sizes, optimiser and data easeml's built-in
candidates use: mlp-256 (784-256-10, ReLU, batch 200) and cnn-16-32 (two
3x3 conv-ReLU-2x2-pool blocks of 16 and 32 filters, a 128-unit ReLU layer,
batch 64), Adam at 1e-3, Fashion-MNIST's training images standardised per
pixel, 80% of them for training as easeml's split.  Arithmetic is plain
FP32 (no TF32), as easeml's cuBLAS calls.  Timed, as easeml's
train_seconds: moving the data to the device, the epochs and the
validation predictions; not timed: reading the files and starting CUDA.
Prints one JSON object: seconds per epoch, validation accuracy.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import datasets  # noqa: E402


def fashion(rows):
    d = datasets.FASHION_DIR
    n, p, pix = datasets._idx(os.path.join(d, "train-images-idx3-ubyte.gz"), 0x803)
    _, _, lab = datasets._idx(os.path.join(d, "train-labels-idx1-ubyte.gz"), 0x801)
    x = np.frombuffer(pix, dtype=np.uint8).reshape(n, p).astype(np.float32)
    y = np.frombuffer(lab, dtype=np.uint8).astype(np.int64)
    if rows and rows < n:
        x, y = x[:rows], y[:rows]
    order = np.random.RandomState(0).permutation(len(y))
    cut = int(len(y) * 0.8)
    tr, va = order[:cut], order[cut:]
    mean = x[tr].mean(0)
    sd = x[tr].std(0)
    sd[sd == 0] = 1.0
    return (x[tr] - mean) / sd, y[tr], (x[va] - mean) / sd, y[va]


def network(name):
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                   torch.nn.Linear(256, 10)), 200
    return torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 28, 28)),
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10)), 64


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], required=True)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rows", type=int, default=None)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    xtr, ytr, xva, yva = fashion(args.rows)
    dev = torch.device(args.device)
    model, batch = network(args.model)
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = torch.nn.CrossEntropyLoss()
    if dev.type == "cuda":
        torch.cuda.synchronize()

    start = time.perf_counter()
    x = torch.from_numpy(xtr).to(dev)
    y = torch.from_numpy(ytr).to(dev)
    xv = torch.from_numpy(xva).to(dev)
    for _ in range(args.epochs):
        order = torch.randperm(x.shape[0], device=dev)
        for b in range(0, x.shape[0], batch):
            i = order[b:b + batch]
            opt.zero_grad()
            loss = lossf(model(x[i]), y[i])
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = torch.cat([model(xv[b:b + 1024]).argmax(1) for b in range(0, xv.shape[0], 1024)])
    if dev.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    acc = float((pred.cpu().numpy() == yva).mean())
    print(json.dumps({"model": args.model, "device": str(dev), "epochs": args.epochs,
                      "train_rows": len(ytr), "batch": batch,
                      "seconds_per_epoch": seconds / args.epochs, "accuracy": acc,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
