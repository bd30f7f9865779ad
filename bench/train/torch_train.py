#!/usr/bin/env python3
"""The PyTorch side of bench/train: cudagap-train's model, data, seed and hyperparameters in
PyTorch, written as the research_training.py template writes its loop (seeds, cudnn.benchmark,
TF32, autocast + GradScaler, AdamW, CrossEntropyLoss, loss.item() every step), eager or under
torch.compile; or the evaluation of a checkpoint cudagap-train saved.

  torch_train.py [--data DIR] [--epochs N] [--batch-size B] [--lr LR] [--weight-decay WD]
                 [--dropout P] [--seed S] [--precision fp16|bf16|fp32] [--train-limit N]
                 [--test-limit N] [--mode eager|compile] [--compile-mode default|reduce-overhead]
  torch_train.py --evaluate-checkpoint MODEL.safetensors [--data DIR] [--test-limit N]

Training prints one JSON object on stdout, with the same per-epoch fields as cudagap-train's
--json (mean_loss, test_accuracy, images_per_second, seconds, loss_scale, skipped_steps) and
"images_per_second": the rate of epoch 2 (epoch 1 is the warm-up: cuDNN's algorithm search,
torch.compile's compilation), or of epoch 1 with "warmed_up": false when only one epoch ran.
--evaluate-checkpoint loads the file with safetensors.torch.load_file (where the package is
missing, with its own reader of the format: "loader" says which) and load_state_dict(strict=True)
into the same model and prints its test accuracy, measured in
eval mode in FP32 (TF32 off).

The data is read here from the IDX files (raw or .gz), with cudagap-train's normalisation.
Exit code: 0 when it ran, and 0 with {"ok": false, "reason": ...} when torch, CUDA or
safetensors is missing (a skip, as in bench/compare_torch.py); 1 when the data or the checkpoint
is wrong ({"ok": false, "error": ...}); 2 for a bad command line. Only the JSON goes to stdout.
"""

import argparse
import contextlib
import gzip
import json
import math
import os
import struct
import sys
import time

# Fashion-MNIST's mean and standard deviation of pixel / 255 (cudagap-train uses the same).
MEAN, STD = 0.2860, 0.3530
CLASSES = 10
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
FILES = {"train_images": "train-images-idx3-ubyte", "train_labels": "train-labels-idx1-ubyte",
         "test_images": "t10k-images-idx3-ubyte", "test_labels": "t10k-labels-idx1-ubyte"}
# The model's tensors as PyTorch names them (the names and shapes of cudagap's checkpoint).
STATE_SHAPES = {"conv1.weight": [32, 1, 5, 5], "conv1.bias": [32],
                "conv2.weight": [64, 32, 5, 5], "conv2.bias": [64],
                "fc1.weight": [1024, 64 * 7 * 7], "fc1.bias": [1024],
                "fc2.weight": [10, 1024], "fc2.bias": [10]}


class DataError(Exception):
    """A data set or checkpoint file that is missing or not what it should be."""


class Skip(Exception):
    """Something this run needs (torch, CUDA, safetensors) is not here: not measured."""


# ---- IDX files ------------------------------------------------------------------------------

def idx_path(directory, stem):
    """The file of @stem in @directory, raw or gzip (raw first, as cudagap-train looks)."""
    for name in (stem, stem + ".gz"):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    raise DataError(f"{os.path.join(directory, stem)}[.gz] is missing (Fashion-MNIST: Debian's "
                    f"package dataset-fashion-mnist installs it in {DEFAULT_DATA})")


def read_idx(path, limit=0):
    """(dims, payload bytes) of the IDX file @path (raw or gzip), cut to its first @limit items
    when @limit > 0. Only unsigned bytes (type 0x08) are accepted: Fashion-MNIST's type."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as stream:
            data = stream.read()
    except (OSError, EOFError) as error:
        raise DataError(f"{path}: cannot be read: {error}") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DataError(f"{path}: not an IDX file (bad magic number)")
    if data[2] != 0x08:
        raise DataError(f"{path}: element type 0x{data[2]:02x}, expected 0x08 (unsigned bytes)")
    ndim = data[3]
    if ndim < 1 or len(data) < 4 + 4 * ndim:
        raise DataError(f"{path}: truncated header ({ndim} dimensions)")
    dims = list(struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim]))
    item = math.prod(dims[1:])
    expected = dims[0] * item
    payload = data[4 + 4 * ndim:]
    if len(payload) != expected:
        raise DataError(f"{path}: {len(payload)} bytes of data, the header {dims} says {expected}")
    if limit > 0 and limit < dims[0]:
        dims[0] = limit
        payload = payload[:limit * item]
    return dims, payload


def load_split(directory, images_stem, labels_stem, limit):
    """The images (N x 28 x 28 bytes) and labels (N bytes, each < 10) of one split."""
    image_file, label_file = idx_path(directory, images_stem), idx_path(directory, labels_stem)
    image_dims, images = read_idx(image_file, limit)
    label_dims, labels = read_idx(label_file, limit)
    if len(image_dims) != 3 or image_dims[1:] != [28, 28]:
        raise DataError(f"{image_file}: images of {image_dims[1:]}, expected 28 x 28")
    if len(label_dims) != 1:
        raise DataError(f"{label_file}: {len(label_dims)} dimensions, expected 1")
    if image_dims[0] != label_dims[0]:
        raise DataError(f"{image_file} has {image_dims[0]} images but {label_file} "
                        f"{label_dims[0]} labels")
    if image_dims[0] == 0:
        raise DataError(f"{image_file}: no images")
    if max(labels) >= CLASSES:
        raise DataError(f"{label_file}: label {max(labels)}, expected 0 to {CLASSES - 1}")
    return images, labels, image_dims[0]


def load_data(directory, train_limit, test_limit, need_train=True):
    """Both splits (or only the test split) as {name: (images, labels, count)}."""
    data = {"test": load_split(directory, FILES["test_images"], FILES["test_labels"], test_limit)}
    if need_train:
        data["train"] = load_split(directory, FILES["train_images"], FILES["train_labels"],
                                   train_limit)
    return data


def checkpoint_problems(path):
    """What keeps @path (a safetensors file) from loading into the model with strict=True: the
    names and shapes in its header against the model's, read without torch so that the message
    names the tensors rather than PyTorch's traceback."""
    try:
        with open(path, "rb") as stream:
            size = struct.unpack("<Q", stream.read(8))[0]
            header = json.loads(stream.read(size)) if size < (100 << 20) else None
    except (OSError, struct.error, ValueError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: not a safetensors file: {error}") from None
    if not isinstance(header, dict):
        raise DataError(f"{path}: not a safetensors file (bad header)")
    found = {k: v.get("shape") for k, v in header.items() if k != "__metadata__" and isinstance(v, dict)}
    problems = [f"missing '{name}'" for name in STATE_SHAPES if name not in found]
    problems += [f"unexpected '{name}'" for name in found if name not in STATE_SHAPES]
    problems += [f"'{name}' is {found[name]}, expected {shape}" for name, shape in STATE_SHAPES.items()
                 if name in found and found[name] != shape]
    return problems


# ---- PyTorch --------------------------------------------------------------------------------

def import_torch():
    """torch, with CUDA, or Skip saying why not. A library that prints on import must not
    spoil stdout's JSON, so its output goes to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        try:
            import torch  # noqa: PLC0415 (optional: the script reports its absence)
        except Exception as error:  # noqa: BLE001 (any import failure is a reason to report)
            raise Skip(f"torch is not importable by {sys.executable}: {error}") from None
    if not torch.cuda.is_available():
        raise Skip(f"torch {torch.__version__} sees no CUDA device")
    return torch


def build_model(torch, dropout):
    """cudagap-train's CNN with the names its checkpoint uses."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
            self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
            self.fc1 = nn.Linear(64 * 7 * 7, 1024)
            self.fc2 = nn.Linear(1024, CLASSES)
            self.pool = nn.MaxPool2d(2)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            x = self.pool(torch.relu(self.conv1(x)))
            x = self.pool(torch.relu(self.conv2(x)))
            x = self.dropout(torch.relu(self.fc1(torch.flatten(x, 1))))
            return self.fc2(x)

    return Net()


def to_device(torch, split):
    """(images N x 1 x 28 x 28 normalised FP32, labels int64) on the GPU, copied once."""
    images, labels, count = split
    x = torch.frombuffer(bytearray(images), dtype=torch.uint8).reshape(count, 1, 28, 28)
    y = torch.frombuffer(bytearray(labels), dtype=torch.uint8).to(torch.int64)
    x = (x.to("cuda").float() / 255.0 - MEAN) / STD
    return x.contiguous(), y.to("cuda")


def autocast_of(torch, precision):
    """The template's `with autocast():` for @precision (FP32: none)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.float16 if precision == "fp16" else torch.bfloat16
    return torch.autocast("cuda", dtype=dtype)


def accuracy(torch, model, x, y, precision, batch=1000):
    """Fraction of @x classified as @y, in eval mode (the model is put back into train mode)."""
    model.eval()
    correct = 0
    with torch.no_grad(), autocast_of(torch, precision):
        for start in range(0, x.shape[0], batch):
            logits = model(x[start:start + batch])
            correct += (logits.argmax(1) == y[start:start + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def train_epoch(torch, step, x, y, batch_size, generator):
    """One epoch, shuffled on the device from @generator; (mean loss, seconds)."""
    order = torch.randperm(x.shape[0], device="cuda", generator=generator)
    torch.cuda.synchronize()
    start = time.perf_counter()
    total, steps = 0.0, 0
    for first in range(0, x.shape[0], batch_size):
        index = order[first:first + batch_size]
        total += step(x[index], y[index])   # loss.item(), every step, as the template writes it
        steps += 1
    torch.cuda.synchronize()
    return total / steps, time.perf_counter() - start


def make_step(torch, model, optimizer, scaler, precision):
    """The template's step: zero_grad, autocast forward + loss, scaled backward, step, update."""
    criterion = torch.nn.CrossEntropyLoss()

    def step(data, target):
        optimizer.zero_grad()
        with autocast_of(torch, precision):
            loss = criterion(model(data), target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    return step


def make_scaler(torch, enabled):
    """GradScaler() as the template writes it: torch.amp's (PyTorch 2.3+), else torch.cuda.amp's."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler("cuda", enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def set_up(torch, seed):
    """The template's seeds and math settings."""
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


def train(torch, args, data):
    """Trains and returns the report (a dict)."""
    set_up(torch, args.seed)
    x, y = to_device(torch, data["train"])
    test_x, test_y = to_device(torch, data["test"])
    model = build_model(torch, args.dropout).to("cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scaler = make_scaler(torch, args.precision == "fp16")
    runner = model
    if args.mode == "compile":
        runner = torch.compile(model, mode=None if args.compile_mode == "default" else args.compile_mode)
    model.train()
    step = make_step(torch, runner, optimizer, scaler, args.precision)
    generator = torch.Generator(device="cuda").manual_seed(args.seed)
    epochs = []
    for epoch in range(1, args.epochs + 1):
        skipped_before = _skipped(scaler)
        mean_loss, seconds = train_epoch(torch, step, x, y, args.batch_size, generator)
        epochs.append({"epoch": epoch, "mean_loss": mean_loss,
                       # The module itself, not the compiled one: evaluation is not timed, and
                       # eval mode and its batch size would only make torch.compile recompile.
                       "test_accuracy": accuracy(torch, model, test_x, test_y, args.precision),
                       "images_per_second": x.shape[0] / seconds, "seconds": seconds,
                       "loss_scale": float(scaler.get_scale()) if scaler.is_enabled() else 1.0,
                       "skipped_steps": _skipped(scaler) - skipped_before})
        print(f"torch {args.mode} {args.precision} epoch {epoch}: loss {mean_loss:.4f}, "
              f"accuracy {epochs[-1]['test_accuracy']:.4f}, {x.shape[0] / seconds:.0f} images/s",
              file=sys.stderr)
    measured = epochs[1] if len(epochs) > 1 else epochs[0]
    return {"ok": True, "program": "torch_train.py", "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0), "cuda": torch.version.cuda, "mode": args.mode,
            "compile_mode": args.compile_mode if args.mode == "compile" else None,
            "precision": args.precision, "seed": args.seed, "batch_size": args.batch_size,
            "lr": args.lr, "weight_decay": args.weight_decay, "dropout": args.dropout,
            "train_images": int(x.shape[0]), "test_images": int(test_x.shape[0]), "epochs": epochs,
            "final_test_accuracy": epochs[-1]["test_accuracy"],
            "images_per_second": measured["images_per_second"], "measured_epoch": measured["epoch"],
            "warmed_up": len(epochs) > 1, "first_epoch_seconds": epochs[0]["seconds"]}


def _skipped(scaler):
    """Steps the scaler has skipped so far: each skip halves the scale, which PyTorch counts
    nowhere else; this counts the back-offs instead (FP16 only)."""
    if not scaler.is_enabled():
        return 0
    state = getattr(scaler, "_bench_state", None)
    scale = float(scaler.get_scale())
    if state is None:
        scaler._bench_state = [scale, 0]
        return 0
    if scale < state[0]:
        state[1] += round(math.log2(state[0] / scale))
    state[0] = scale
    return state[1]


def load_state(torch, path):
    """(state dict, how it was read): with safetensors.torch.load_file, as a PyTorch user reads
    the file; where the safetensors package is missing (a GPU host's torch environment may lack
    it), with the format's own layout (a JSON header, then little-endian F32 data), so that the
    check still runs and the report says which reader it used."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            from safetensors.torch import load_file  # noqa: PLC0415 (optional)
        return load_file(path), "safetensors.torch.load_file"
    except ImportError:
        pass
    except AttributeError:  # a safetensors that cannot work with this torch
        pass
    with open(path, "rb") as stream:
        size = struct.unpack("<Q", stream.read(8))[0]
        header = json.loads(stream.read(size))
        data = stream.read()
    state = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info.get("dtype") != "F32":
            raise DataError(f"{path}: tensor '{name}' is {info.get('dtype')}, expected F32")
        begin, end = info["data_offsets"]
        state[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(info["shape"])
    return state, "torch_train.py's safetensors reader (the safetensors package is not importable)"


def evaluate_checkpoint(args, data):
    """The test accuracy PyTorch measures with cudagap's checkpoint."""
    if not os.path.isfile(args.evaluate_checkpoint):
        raise DataError(f"{args.evaluate_checkpoint}: no such file")
    problems = checkpoint_problems(args.evaluate_checkpoint)
    if problems:
        raise DataError(f"{args.evaluate_checkpoint} is not this model's checkpoint: " + "; ".join(problems))
    torch = import_torch()
    state, loader = load_state(torch, args.evaluate_checkpoint)
    model = build_model(torch, 0.0)
    model.load_state_dict(state, strict=True)
    model = model.to("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    test_x, test_y = to_device(torch, data["test"])
    return {"ok": True, "program": "torch_train.py", "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0), "checkpoint": args.evaluate_checkpoint,
            "test_images": int(test_x.shape[0]), "precision": "fp32", "loader": loader,
            "test_accuracy": accuracy(torch, model, test_x, test_y, "fp32")}


# ---- command line ---------------------------------------------------------------------------

def count(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {text}")
    return value


def positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def positive_float(text):
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def probability(text):
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected 0 <= p < 1, got {text}")
    return value


def non_negative_float(text):
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=positive, default=10)
    parser.add_argument("--batch-size", type=positive, default=64)
    parser.add_argument("--lr", type=positive_float, default=1e-3)
    parser.add_argument("--weight-decay", type=non_negative_float, default=0.01)
    parser.add_argument("--dropout", type=probability, default=0.4)
    parser.add_argument("--seed", type=count, default=42)
    parser.add_argument("--precision", choices=("fp16", "bf16", "fp32"), default="fp16")
    parser.add_argument("--train-limit", type=count, default=0, help="first N training images (0: all)")
    parser.add_argument("--test-limit", type=count, default=0, help="first N test images (0: all)")
    parser.add_argument("--mode", choices=("eager", "compile"), default="eager")
    parser.add_argument("--compile-mode", choices=("default", "reduce-overhead", "max-autotune"),
                        default="default", help="torch.compile's mode (with --mode compile)")
    parser.add_argument("--evaluate-checkpoint", metavar="FILE")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    try:
        data = load_data(args.data, args.train_limit, args.test_limit,
                         need_train=args.evaluate_checkpoint is None)
        if args.evaluate_checkpoint is not None:
            report = evaluate_checkpoint(args, data)
        else:
            report = train(import_torch(), args, data)
    except Skip as why:
        report = {"ok": False, "reason": str(why)}
    except DataError as error:
        print(f"torch_train.py: {error}", file=sys.stderr)
        print(json.dumps({"ok": False, "error": str(error)}))
        return 1
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
