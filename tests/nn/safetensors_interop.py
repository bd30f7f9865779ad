#!/usr/bin/env python3
"""Python's safetensors reads the files cudagap writes, and cudagap reads the files Python writes.

    safetensors_interop.py <cudagap_nn_safetensors_interop>

The program writes all.safetensors (a tensor of every dtype) and numpy.safetensors; this script
reads them with the reference implementation (safetensors.deserialize, which checks the whole
file as safetensors.torch.load_file does, and safetensors.numpy.load_file) and checks each tensor
against the recipe in safetensors_interop.cpp; when PyTorch is installed, with
safetensors.torch.load_file too. Then it writes a file with safetensors.numpy.save_file and has
the program check it. Then the same for a training checkpoint: the model file holds exactly the
model's state_dict keys (what load_state_dict(strict=True) takes; tried with PyTorch where it is
installed), the optimizer file beside it the moments and the metadata; and a state dict written
by Python reads as the model's parameters. Exits 77 (Skipped) when safetensors or NumPy is missing.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import safetensors
    from safetensors.numpy import load_file, save_file
except ImportError as error:
    print(f"SKIPPED: {error} (pip install safetensors numpy)")
    sys.exit(77)

DTYPES = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16",
          "I32", "U32", "F32", "F64", "I64", "U64", "C64"]
SIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
         "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8, "C64": 8}
NUMPY = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
         "F16": np.float16, "I32": np.int32, "U32": np.uint32, "F32": np.float32,
         "F64": np.float64, "I64": np.int64, "U64": np.uint64, "C64": np.complex64}
METADATA = {"format": "pt", "producer": "cudagap", "note": '日本語 "quoted"\n'}


def recipe_bytes(j):
    name = DTYPES[j]
    count = 6 * SIZES[name]
    if name == "BOOL":
        return bytes((k + j) % 2 for k in range(count))
    return bytes((29 * k + 7 * j + 3) % 256 for k in range(count))


def check_cudagap_files(folder):
    with open(os.path.join(folder, "all.safetensors"), "rb") as f:
        tensors = dict(safetensors.deserialize(f.read()))
    assert len(tensors) == 2 + len(DTYPES), sorted(tensors)
    for j, name in enumerate(DTYPES):
        t = tensors[f"t.{name}"]
        assert t["dtype"] == name and t["shape"] == [2, 3], (name, t["dtype"], t["shape"])
        assert bytes(t["data"]) == recipe_bytes(j), f"t.{name}: the bytes differ"
    assert tensors["empty"]["shape"] == [0, 3] and len(tensors["empty"]["data"]) == 0
    assert np.frombuffer(bytes(tensors["scalar"]["data"]), "<f8").tolist() == [2.5]
    with safetensors.safe_open(os.path.join(folder, "all.safetensors"), framework="numpy") as f:
        assert f.metadata() == METADATA, f.metadata()

    arrays = load_file(os.path.join(folder, "numpy.safetensors"))
    for j, name in enumerate(DTYPES):
        if name in NUMPY:
            a = arrays[f"t.{name}"]
            assert a.dtype == NUMPY[name] and a.shape == (2, 3), (name, a.dtype, a.shape)
            assert a.tobytes() == recipe_bytes(j), f"t.{name}: the values differ"
    assert arrays["scalar"].shape == () and arrays["scalar"] == 2.5
    assert arrays["empty"].shape == (0, 3) and arrays["empty"].dtype == np.float32
    print("Python's safetensors read cudagap's files: every dtype, metadata, empty and scalar tensors")


def check_with_torch(folder):
    try:
        import torch
        from safetensors.torch import load_file as torch_load_file
    except ImportError:
        print("PyTorch is not installed: safetensors.torch.load_file not tried")
        return
    tensors = torch_load_file(os.path.join(folder, "all.safetensors"))
    assert tensors["t.BF16"].dtype == torch.bfloat16 and tuple(tensors["t.BF16"].shape) == (2, 3)
    assert tensors["t.F32"].dtype == torch.float32 and tensors["scalar"].item() == 2.5
    print("safetensors.torch.load_file read cudagap's file")


MODEL = {"fc1.weight": (4, 6), "fc1.bias": (4,), "fc2.weight": (3, 4), "fc2.bias": (3,)}


def model_recipe(shift=0.0):
    """The checkpoint's parameters (see safetensors_interop.cpp): p / 2 + i / 64 + shift."""
    return {name: (p / 2 + np.arange(np.prod(shape), dtype=np.float32) / 64 + shift).reshape(shape)
            for p, (name, shape) in enumerate(MODEL.items())}


def check_checkpoint(folder):
    path = os.path.join(folder, "checkpoint.safetensors")
    optim_path = os.path.join(folder, "checkpoint.optim.safetensors")
    model = load_file(path)
    assert list(model) == list(MODEL), sorted(model)  # the state_dict's keys and order, no more
    for name, values in model_recipe().items():
        assert model[name].dtype == np.float32 and np.array_equal(model[name], values), name
    optim = load_file(optim_path)
    assert sorted(optim) == sorted([f"exp_avg.{n}" for n in MODEL] + [f"exp_avg_sq.{n}" for n in MODEL])
    for prefix, shift in (("exp_avg.", 1.0), ("exp_avg_sq.", 2.0)):
        for name, values in model_recipe(shift).items():
            assert np.array_equal(optim[prefix + name], values), prefix + name
    with safetensors.safe_open(path, framework="numpy") as f:
        model_meta = f.metadata()
    with safetensors.safe_open(optim_path, framework="numpy") as f:
        optim_meta = f.metadata()
    assert model_meta["format"] == "pt" and model_meta["step"] == "42", model_meta
    assert optim_meta == {"cudagap.checkpoint": model_meta["cudagap.checkpoint"], "step": "42",
                          "grad_scaler.enabled": "true", "grad_scaler.scale": "1024",
                          "grad_scaler.growth_tracker": "5"}, optim_meta
    print("Python's safetensors read cudagap's training checkpoint: the state_dict keys only, "
          "the moments and the metadata beside them")


def check_checkpoint_with_torch(folder):
    try:
        import torch
        from safetensors.torch import load_file as torch_load_file
    except ImportError:
        print("PyTorch is not installed: load_state_dict(strict=True) not tried")
        return

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(6, 4)
            self.fc2 = torch.nn.Linear(4, 3)

    net = Net()
    net.load_state_dict(torch_load_file(os.path.join(folder, "checkpoint.safetensors")), strict=True)
    assert torch.equal(net.fc2.bias, torch.from_numpy(model_recipe()["fc2.bias"]))
    print("model.load_state_dict(load_file(...), strict=True) took cudagap's model file")


def write_python_file(path):
    arrays = {"empty": np.zeros((0, 3), np.float32), "scalar": np.array(2.5, np.float64)}
    for j, name in enumerate(DTYPES):
        if name in NUMPY:
            arrays[f"t.{name}"] = np.frombuffer(recipe_bytes(j), NUMPY[name]).reshape(2, 3)
    save_file(arrays, path, metadata={"format": "np", "producer": "python"})


def main():
    program = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="cudagap-safetensors-") as folder:
        subprocess.run([program, "write", folder], check=True)
        check_cudagap_files(folder)
        check_with_torch(folder)
        python_file = os.path.join(folder, "python.safetensors")
        write_python_file(python_file)
        subprocess.run([program, "check", python_file], check=True)
        print("cudagap read Python's file: every NumPy dtype, metadata, empty and scalar tensors")
        check_checkpoint(folder)
        check_checkpoint_with_torch(folder)
        state_dict = os.path.join(folder, "state_dict.safetensors")
        save_file(model_recipe(), state_dict, metadata={"format": "pt"})  # as save_file(model.state_dict())
        subprocess.run([program, "check-model", state_dict], check=True)
        print("cudagap read a state dict Python wrote as the model's parameters")


if __name__ == "__main__":
    main()
