#!/usr/bin/env python3
"""A stand-in of a cudagap-infer built without the ONNX C++ library, on a machine "with a GPU",
for the GPU proof's path through the Python twin (test_onnx_export.py gpu --exporter twin) where
there is no GPU: its logits are numpy's forward pass of the checkpoint (float64, then FP32), so
ONNX Runtime on the twin's model must agree with them within any precision's tolerance.

It answers the few arguments that proof gives: --version (saying it has no exporter),
--checkpoint, --data, --test-limit, --outputs (the normalised first test images and their logits,
as cudagap-infer writes them) and --json ({"gpu_available": true, ...}); --export-onnx is refused
as cudagap-infer refuses it without the library; the rest is ignored.
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import test_onnx_export as proof  # noqa: E402 (the reference forward pass; imports bench/infer's modules)
import safetensors_file  # noqa: E402 (bench/infer's, on the path test_onnx_export.py set)
import torch_train  # noqa: E402 (bench/train's IDX reader and the normalisation; no torch)


def value(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def main(args):
    if "--version" in args:
        print("cudagap-infer (stand-in)\nONNX export: no (built without the ONNX C++ library)")
        return 0
    if "--export-onnx" in args:
        print("cudagap-infer: --export-onnx: this program was built without the ONNX C++ library", file=sys.stderr)
        return 1
    import numpy  # noqa: PLC0415 (only for a run)

    tensors = safetensors_file.read(value(args, "--checkpoint"))
    weights = {name: numpy.frombuffer(data, "<f4").reshape(shape) for name, (shape, data) in tensors.items()}
    count = int(value(args, "--test-limit") or 64)
    dims, pixels = torch_train.read_idx(torch_train.idx_path(value(args, "--data"), "t10k-images-idx3-ubyte"), count)
    images = numpy.frombuffer(pixels, numpy.uint8).reshape(dims[0], 1, 28, 28).astype(numpy.float32)
    images = ((images / 255.0 - torch_train.MEAN) / torch_train.STD).astype(numpy.float32)
    logits = proof.reference_forward(numpy, weights, images).astype(numpy.float32)
    safetensors_file.write(value(args, "--outputs"), {"input": (list(images.shape), images.astype("<f4").tobytes()),
                                                      "output": (list(logits.shape), logits.astype("<f4").tobytes())})
    with open(value(args, "--json"), "w", encoding="utf-8") as stream:
        json.dump({"program": "cudagap-infer (stand-in)", "gpu_available": True, "device": "numpy",
                   "test_images": int(dims[0]), "onnx": None}, stream)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
