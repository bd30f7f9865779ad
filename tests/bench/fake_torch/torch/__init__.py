"""A stand-in for the few parts of torch that bench/compare_torch.py uses, so that its measuring
path (timing, case names, fields, per-case failures, stdout kept clean) is tested on machines
without PyTorch or a GPU. It times host work with the host clock; its numbers mean nothing.

FAKE_TORCH_NO_CUDA=1 makes torch.cuda.is_available() false; FAKE_TORCH_FAIL=<dtype> makes every
operation on that dtype (e.g. bfloat16) raise, as an unsupported type would.
"""
import os
import time

__version__ = "0.0+fake"
# A library that prints on import: compare_torch.py must keep this off its stdout.
print("fake torch imported")

float32, float16, bfloat16, uint8 = "float32", "float16", "bfloat16", "uint8"
channels_last = "channels_last"


class version:  # noqa: N801 (mirrors torch.version)
    cuda = "13.0"


def _fail_for(dtype):
    if dtype is not None and dtype == os.environ.get("FAKE_TORCH_FAIL"):
        raise RuntimeError(f"fake torch: {dtype} is not supported here")


class Tensor:
    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = dtype

    def contiguous(self, memory_format=None):
        assert memory_format in (None, channels_last)
        return self


class Generator:
    def __init__(self, device=None):
        assert device == "cuda"

    def manual_seed(self, seed):
        assert isinstance(seed, int)
        return self


def randn(*shape, device=None, dtype=None, generator=None):
    assert device == "cuda" and isinstance(generator, Generator)
    _fail_for(dtype)
    return Tensor(shape, dtype)


def empty(*shape, device=None, dtype=None):
    assert device == "cuda"
    _fail_for(dtype)
    return Tensor(shape, dtype)


def mm(a, b, out=None):
    assert a.shape[1] == b.shape[0] and out is not None and out.shape == (a.shape[0], b.shape[1])
    _fail_for(a.dtype)
    return out


class inference_mode:  # noqa: N801 (mirrors torch.inference_mode)
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Flags:
    def __init__(self, **values):
        self.__dict__.update(values)


class backends:  # noqa: N801
    class cuda:  # noqa: N801
        matmul = _Flags(allow_tf32=False)

    cudnn = _Flags(benchmark=False, allow_tf32=True)


class nn:  # noqa: N801
    class functional:  # noqa: N801
        @staticmethod
        def conv2d(x, w, padding=0, stride=1):
            _fail_for(x.dtype)
            n, c, h, width = x.shape
            k, c_w, r, s = w.shape
            assert c == c_w
            return Tensor((n, k, (h + 2 * padding - r) // stride + 1,
                           (width + 2 * padding - s) // stride + 1), x.dtype)


class cuda:  # noqa: N801
    @staticmethod
    def is_available():
        return os.environ.get("FAKE_TORCH_NO_CUDA") != "1"

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def current_device():
        return 0

    @staticmethod
    def get_device_name(index):
        assert index == 0
        return "Fake GPU"

    @staticmethod
    def empty_cache():
        pass

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.at = None

        def record(self):
            self.at = time.perf_counter()

        def synchronize(self):
            assert self.at is not None

        def elapsed_time(self, other):
            assert self.at is not None and other.at is not None
            return (other.at - self.at) * 1e3
