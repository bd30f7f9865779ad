#!/usr/bin/env python3
"""The Python twin of cudagap-infer's ONNX exporter (examples/production_inference/onnx_export.cpp):
the same graph from the same checkpoint, written with the Python package `onnx`, for hosts whose
cudagap-infer was built without the ONNX C++ library (libonnx-dev), such as a lent GPU host.

  onnx_twin.py --checkpoint CK.safetensors --out MODEL.onnx

The graph is the C++ exporter's, node for node: Conv "conv1" (5x5, pads 2, strides 1) -> Relu
"relu1" -> MaxPool "pool1" (2x2, strides 2), the same for conv2, Flatten "flatten" (axis 1) ->
Gemm "fc1" (transB) -> Relu "relu3" -> Gemm "output" (transB); input "input" float
[batch, 1, 28, 28], output "output" float [batch, 10], "batch" a named dynamic dimension; the
checkpoint's FP32 tensors as initializers under PyTorch's names, in the same order; opset 17, IR
version 8; then ONNX's checker and its strict shape inference (which records every intermediate
shape, as the C++ exporter's does). Only the producer (`cudagap onnx_twin.py`) and the model's
doc string differ, so that a model always says which exporter made it. The file is written to a
temporary name beside MODEL.onnx, flushed and renamed.

tests/examples/test_onnx_export.py proves the twin: it exports the same checkpoint as cudagap's
exporter (compared field by field, and the logits of both in ONNX Runtime bit for bit) where the
C++ library is there, and checks it against a numpy forward pass in every case.

Exit code: 0 written; 1 the checkpoint is not this model's, or ONNX refused the model; 77 the
package onnx is not importable here (pip install onnx), the reason printed; 2 a bad command line.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "train"))
import safetensors_file  # noqa: E402 (this folder's)
import torch_train  # noqa: E402 (the model's names and shapes; no torch is imported)

SKIP_EXIT_CODE = 77
OPSET = 17
IR_VERSION = 8  # what goes with opset 17 (ONNX 1.12), as the C++ exporter writes
PRODUCER = "cudagap onnx_twin.py"
ORIGIN = ("bench/infer/onnx_twin.py, the Python twin of cudagap-infer's ONNX exporter (the same graph "
          "from the same checkpoint, made with the Python package onnx)")
INPUT_DOC = "28x28 grey images, NCHW: pixels/255, then (x - 0.2860) / 0.3530"
OUTPUT_DOC = "logits of the 10 Fashion-MNIST classes"


class Skip(Exception):
    """The package onnx is missing: no model can be made here."""


def import_onnx():
    """The onnx module, or Skip naming what is missing and how to get it."""
    try:
        import onnx  # noqa: PLC0415 (optional: its absence is a skip)
    except ImportError as error:
        raise Skip(f"{error.name or error} is not importable by {sys.executable} (pip install onnx)") from None
    return onnx


def read_weights(checkpoint):
    """{name: (shape, little-endian F32 bytes)} of @checkpoint, in the graph's order; DataError
    (names, shapes) or FormatError (the file) naming what is wrong."""
    problems = torch_train.checkpoint_problems(checkpoint)
    if problems:
        raise torch_train.DataError(f"{checkpoint} is not this model's checkpoint: " + "; ".join(problems))
    tensors = safetensors_file.read(checkpoint)
    return {name: tensors[name] for name in torch_train.STATE_SHAPES}


def conv_block(helper, source, n):
    """conv<n> -> relu<n> -> pool<n>, each node named after its output."""
    layer, relu, pool = f"conv{n}", f"relu{n}", f"pool{n}"
    return [helper.make_node("Conv", [source, f"{layer}.weight", f"{layer}.bias"], [layer], name=layer,
                             kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]),
            helper.make_node("Relu", [layer], [relu], name=relu),
            helper.make_node("MaxPool", [relu], [pool], name=pool, kernel_shape=[2, 2], strides=[2, 2])]


def batched(onnx, name, rest, doc):
    """A float tensor [batch, rest...], batch the named dynamic dimension."""
    return onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, ["batch", *rest], doc_string=doc)


def build_model(onnx, weights):
    """The ModelProto of @weights (read_weights), checked and with its shapes inferred."""
    helper = onnx.helper
    nodes = conv_block(helper, "input", 1) + conv_block(helper, "pool1", 2)
    nodes += [helper.make_node("Flatten", ["pool2"], ["flatten"], name="flatten", axis=1),
              helper.make_node("Gemm", ["flatten", "fc1.weight", "fc1.bias"], ["fc1"], name="fc1", transB=1),
              helper.make_node("Relu", ["fc1"], ["relu3"], name="relu3"),  # dropout is the identity here
              helper.make_node("Gemm", ["relu3", "fc2.weight", "fc2.bias"], ["output"], name="output", transB=1)]
    initializers = [helper.make_tensor(name, onnx.TensorProto.FLOAT, shape, data, raw=True)
                    for name, (shape, data) in weights.items()]
    graph = helper.make_graph(nodes, "cudagap_fashion_mnist_convnet", [batched(onnx, "input", [1, 28, 28], INPUT_DOC)],
                              [batched(onnx, "output", [10], OUTPUT_DOC)], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER,
                              producer_version=f"onnx {onnx.__version__}", ir_version=IR_VERSION,
                              doc_string="cudagap's Fashion-MNIST convnet (examples/research_training), "
                                         "exported by " + ORIGIN)
    onnx.checker.check_model(model, full_check=False)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def write_atomically(data, path):
    """@data to a temporary file beside @path, flushed to the disk, then renamed over @path."""
    temporary = f"{path}.tmp{os.getpid()}"
    try:
        with open(temporary, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def export(checkpoint, path):
    """Writes the model of @checkpoint to @path; returns its size in bytes."""
    onnx = import_onnx()
    model = build_model(onnx, read_weights(checkpoint))
    data = model.SerializeToString()
    write_atomically(data, path)
    return len(data)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a cudagap-train --save file (F32 safetensors)")
    parser.add_argument("--out", required=True, help="the ONNX file to write")
    args = parser.parse_args(argv)
    try:
        size = export(args.checkpoint, args.out)
    except Skip as why:
        print(f"onnx_twin.py: skipped: {why}")
        return SKIP_EXIT_CODE
    except (torch_train.DataError, safetensors_file.FormatError, OSError) as error:
        print(f"onnx_twin.py: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # noqa: BLE001 (onnx's checker and shape inference raise their own kinds)
        print(f"onnx_twin.py: ONNX refused the model: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(f"onnx_twin.py: wrote {args.out} ({size} bytes, opset {OPSET}, IR {IR_VERSION}) from {args.checkpoint}: "
          f"made by {ORIGIN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
