"""Read a task from easeml and report results: the custom trainer contract.

A custom trainer is a command an admin registers with
easeml.add_custom_model(); easeml's trainer starts it for each run
(docs/devices.md, "Custom trainers").  This module is the Python side of
that contract:

    import easeml_custom as ec
    task = ec.read_task()          # the prepared data, from stdin
    ...train on task.x_train, task.y_train...
    ec.progress(epoch, loss)       # as often as you like
    ec.result(score, extra=1)      # accuracy (or R^2) on task.x_val, once

The data arrive already split, imputed and standardised, exactly as the
built-in families see them, so scores are comparable.  The environment
gives the device (EASEML_DEVICE, EASEML_DEVICE_KIND, CUDA_VISIBLE_DEVICES),
the seed (EASEML_SEED), the time limit in seconds (EASEML_TIME_LIMIT, 0 for
none), the CPU threads (EASEML_THREADS) and where an artifact may be
written (EASEML_ARTIFACT_PATH).  Exit with code 5 (OUT_OF_MEMORY) when the
device runs out of memory: easeml then places the candidate elsewhere.

Only the standard library and numpy are needed.
"""

import json
import os
import sys

import numpy as np

FORMAT = "easeml-data-1"
OUT_OF_MEMORY = 5


class Task:
    """The data of one run: header fields as attributes, arrays as numpy."""

    def __init__(self, header, arrays):
        self.header = header
        self.kind = header["kind"]                  # classification | regression
        self.classes = header.get("classes", [])    # class names, by class id
        self.n_classes = header["n_classes"]
        self.input_shape = header.get("input_shape")  # [C, H, W] for images
        self.params = header.get("params", {})      # the candidate's params
        self.seed = header["seed"]
        self.x_train = arrays["x_train"]
        self.y_train = arrays["y_train"]
        self.x_val = arrays["x_val"]
        self.y_val = arrays["y_val"]

    @property
    def device(self):
        """'cuda' when easeml placed the run on a GPU, else 'cpu'."""
        return os.environ.get("EASEML_DEVICE_KIND", "cpu")

    @property
    def threads(self):
        return int(os.environ.get("EASEML_THREADS", "1"))

    @property
    def time_limit(self):
        """Seconds the run may take (0: no limit)."""
        return float(os.environ.get("EASEML_TIME_LIMIT", "0"))

    @property
    def artifact_path(self):
        return os.environ.get("EASEML_ARTIFACT_PATH")


def read_task(stream=None):
    """Read the header line and the arrays it announces."""
    f = stream or sys.stdin.buffer
    header = json.loads(f.readline())
    if header.get("format") != FORMAT:
        raise ValueError("not easeml data: format %r" % header.get("format"))
    arrays = {}
    for a in header["arrays"]:
        dtype = np.dtype(a["dtype"]).newbyteorder("<")
        count = int(np.prod(a["shape"])) if a["shape"] else 1
        raw = f.read(count * dtype.itemsize)
        if len(raw) != count * dtype.itemsize:
            raise ValueError("short read of %s" % a["name"])
        arrays[a["name"]] = np.frombuffer(raw, dtype=dtype).reshape(a["shape"])
    return Task(header, arrays)


def _say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def progress(epoch, loss=None):
    """Report progress (shown in easeml.runs.epoch and loss)."""
    _say({"epoch": int(epoch), "loss": None if loss is None else float(loss)})


def result(score, **extra):
    """Report the final validation score; extra values land in the metrics."""
    obj = {"score": float(score)}
    obj.update(extra)
    _say(obj)


def fail(message, code=1):
    """Give up with a message easeml records as the run's error."""
    _say({"error": str(message)})
    sys.exit(code)
