"""A stand-in for the package onnx with its version alone: what onnxruntime_env.py's probe imports
when a test hands it a Python with the fake onnxruntime. Nothing builds a model with it: the Python
twin of cudagap-infer's exporter (bench/infer/onnx_twin.py) is tested with the real package
(tests/examples/test_onnx_export.py, in the fixture's Python)."""

__version__ = "0.0+fake"
