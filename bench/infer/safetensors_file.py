"""The few lines of the safetensors format that bench/infer and its tests need, in plain Python
(no numpy, torch or safetensors package: a GPU host's Python may have none of them).

A file is an 8-byte little-endian header length, a JSON header {name: {"dtype", "shape",
"data_offsets": [begin, end]}, "__metadata__": {...}}, then the tensors' bytes back to back.
Only F32 is written and read here: the model's checkpoint and cudagap-infer's --outputs file.
"""

import json
import math
import os
import struct
import sys
from array import array

MAX_HEADER = 100 << 20


class FormatError(Exception):
    """A file that is not safetensors, or not what it should be (the message names the file)."""


def _little_endian(values):
    """@values (an array('f')) as little-endian bytes."""
    if sys.byteorder != "little":
        values = array("f", values)
        values.byteswap()
    return values.tobytes()


def write(path, tensors, metadata=None):
    """Writes @tensors ({name: (shape, values)}: an array('f'), anything array('f') takes, or
    little-endian F32 bytes) to @path,
    through a temporary name and a rename, as cudagap's writer does."""
    header, chunks, offset = {}, [], 0
    for name, (shape, values) in tensors.items():
        if isinstance(values, (bytes, bytearray, memoryview)):
            data = bytes(values)  # already little-endian F32 (numpy's astype("<f4").tobytes())
        else:
            data = _little_endian(values if isinstance(values, array) and values.typecode == "f"
                                  else array("f", values))
        if len(data) != 4 * math.prod(shape):
            raise ValueError(f"tensor '{name}': {len(data) // 4} values for shape {list(shape)}")
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the reference writer does
    temporary = f"{path}.partial"
    with open(temporary, "wb") as stream:
        stream.write(struct.pack("<Q", len(text)))
        stream.write(text)
        for chunk in chunks:
            stream.write(chunk)
    os.replace(temporary, path)


def read(path):
    """{name: (shape, bytes)} of the F32 tensors of @path (little-endian bytes), or FormatError
    naming what is wrong."""
    try:
        with open(path, "rb") as stream:
            blob = stream.read()
    except OSError as error:
        raise FormatError(f"{path}: cannot be read: {error}") from None
    if len(blob) < 8:
        raise FormatError(f"{path}: not a safetensors file ({len(blob)} bytes)")
    size = struct.unpack("<Q", blob[:8])[0]
    if size > min(MAX_HEADER, len(blob) - 8):
        raise FormatError(f"{path}: not a safetensors file (header length {size})")
    try:
        header = json.loads(blob[8:8 + size])
    except (ValueError, UnicodeDecodeError) as error:
        raise FormatError(f"{path}: not a safetensors file (header: {error})") from None
    if not isinstance(header, dict):
        raise FormatError(f"{path}: not a safetensors file (the header is no JSON object)")
    data = blob[8 + size:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict) or info.get("dtype") != "F32":
            raise FormatError(f"{path}: tensor '{name}' is {info.get('dtype') if isinstance(info, dict) else info}, "
                              "expected F32")
        shape, (begin, end) = info.get("shape", []), info.get("data_offsets", [0, -1])
        if not 0 <= begin <= end <= len(data) or end - begin != 4 * math.prod(shape):
            raise FormatError(f"{path}: tensor '{name}': data_offsets [{begin}, {end}] do not hold F32 {shape} "
                              f"in the {len(data)} bytes of data")
        tensors[name] = (list(shape), data[begin:end])
    return tensors


def floats(data):
    """The little-endian F32 bytes @data as an array('f')."""
    values = array("f")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values
