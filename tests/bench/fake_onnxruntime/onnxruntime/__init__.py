"""A stand-in for the parts of onnxruntime that bench/infer (compare_onnx.py, baselines.py) uses,
so that their timing, provider choice, comparison and failures are tested without the package.

The "model" file is JSON {"scale": s}: a session's output "output" is s x the first 10 values of
each input image (numpy), so a test knows exactly what ONNX Runtime would answer. Anything else in
the file is refused as the real one refuses a broken model. FAKE_ORT_PROVIDERS (comma-separated,
default CPUExecutionProvider) is what get_available_providers() lists; FAKE_ORT_CUDA_FAILS=1 makes
a session asked for CUDA fall back to the CPU, as the real one does when its CUDA libraries cannot
load.
"""
import json
import os

import numpy

__version__ = "0.0+fake"
print("fake onnxruntime imported")  # a library that prints: stdout must stay JSON


def get_available_providers():
    return os.environ.get("FAKE_ORT_PROVIDERS", "CPUExecutionProvider").split(",")


class SessionOptions:
    log_severity_level = 2


class _Arg:
    def __init__(self, name, shape):
        self.name, self.shape, self.type = name, shape, "tensor(float)"


class InferenceSession:
    def __init__(self, path, sess_options=None, providers=None):
        assert isinstance(sess_options, SessionOptions) or sess_options is None
        with open(path, encoding="utf-8") as stream:
            try:
                self.scale = float(json.load(stream)["scale"])
            except (ValueError, KeyError, TypeError) as error:
                raise RuntimeError(f"[ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model from {path} failed: {error}")
        names = [p[0] if isinstance(p, tuple) else p for p in providers or ["CPUExecutionProvider"]]
        assert all(n in get_available_providers() for n in names), (names, get_available_providers())
        self.options = {p[0]: p[1] for p in providers or [] if isinstance(p, tuple)}
        if os.environ.get("FAKE_ORT_CUDA_FAILS") == "1":
            names = [n for n in names if n != "CUDAExecutionProvider"]
        self.providers = names

    def get_providers(self):
        return list(self.providers)

    def get_inputs(self):
        return [_Arg("input", ["batch", 1, 28, 28])]

    def get_outputs(self):
        return [_Arg("output", ["batch", 10])]

    def run(self, names, feed):
        assert names in (None, ["output"]) and list(feed) == ["input"]
        x = feed["input"]
        assert x.dtype == numpy.float32 and x.ndim == 4 and x.shape[1:] == (1, 28, 28), (x.dtype, x.shape)
        return [(self.scale * x.reshape(x.shape[0], -1)[:, :10]).astype(numpy.float32)]
