#!/usr/bin/python3
"""An easeml custom trainer using PyTorch: a ReLU MLP trained with Adam.

It trains on the GPU easeml placed the run on (EASEML_DEVICE_KIND=cuda;
CUDA_VISIBLE_DEVICES then shows only that GPU), else on the CPU, and exits
with easeml's out-of-memory status when the GPU runs out of memory, so that
easeml places the candidate elsewhere.  params: hidden (units, default 256),
epochs (default 5), batch (default 200), lr (default 1e-3).  Classification
reports validation accuracy, regression R^2; the state_dict is the artifact.

    SELECT easeml.add_custom_model('torch-mlp',
        ARRAY['/usr/bin/python3', '/path/to/scripts/custom_trainers/torch_mlp.py'],
        kinds => '{classification,regression}', device_kinds => '{cuda,cpu}');
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import easeml_custom as ec  # noqa: E402

import torch  # noqa: E402


def train(task, device):
    torch.manual_seed(task.seed)
    torch.set_num_threads(task.threads)
    regression = task.kind == "regression"
    hidden = int(task.params.get("hidden", 256))
    epochs = int(task.params.get("epochs", 5))
    batch = int(task.params.get("batch", 200))
    out = 1 if regression else task.n_classes
    x = torch.from_numpy(task.x_train.copy()).to(device)
    xv = torch.from_numpy(task.x_val.copy()).to(device)
    if regression:
        y = torch.from_numpy(task.y_train.astype("float32")).to(device)
        mean, sd = y.mean(), y.std().clamp_min(1e-12)
        y = (y - mean) / sd
    else:
        y = torch.from_numpy(task.y_train.astype("int64")).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, out)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=float(task.params.get("lr", 1e-3)))
    lossf = torch.nn.MSELoss() if regression else torch.nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        order = torch.randperm(x.shape[0], device=device)
        total = 0.0
        for b in range(0, x.shape[0], batch):
            i = order[b:b + batch]
            opt.zero_grad()
            z = model(x[i])
            loss = lossf(z.squeeze(1), y[i]) if regression else lossf(z, y[i])
            loss.backward()
            opt.step()
            total += loss.item() * len(i)
        ec.progress(epoch, total / x.shape[0])
    with torch.no_grad():
        z = model(xv)
    if regression:
        pred = (z.squeeze(1) * sd + mean).cpu().double().numpy()
        yv = task.y_val
        score = 1.0 - ((yv - pred) ** 2).sum() / max(((yv - yv.mean()) ** 2).sum(), 1e-300)
    else:
        score = float((z.argmax(1).cpu().numpy() == task.y_val).mean())
    return model, score


def main():
    task = ec.read_task()
    device = "cuda" if task.device == "cuda" else "cpu"
    try:
        model, score = train(task, device)
    except torch.cuda.OutOfMemoryError as e:
        ec.fail("CUDA out of memory: %s" % str(e).splitlines()[0], ec.OUT_OF_MEMORY)
    if task.artifact_path:
        torch.save(model.state_dict(), task.artifact_path)
    ec.result(score, device=device, torch=torch.__version__)


if __name__ == "__main__":
    main()
