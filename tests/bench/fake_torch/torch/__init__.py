"""A stand-in for the few parts of torch that bench/compare_torch.py uses, so that its measuring
path (timing, case names, fields, per-case failures, stdout kept clean) is tested on machines
without PyTorch or a GPU. It times host work with the host clock; its numbers mean nothing.

FAKE_TORCH_NO_CUDA=1 makes torch.cuda.is_available() false; FAKE_TORCH_FAIL=<dtype> makes every
operation on that dtype (e.g. bfloat16) raise, as an unsupported type would;
FAKE_TORCH_NO_DISTRIBUTED=1 makes torch.distributed unavailable; FAKE_TORCH_NO_L2=1 makes the
device properties lack L2_cache_size (an older torch); FAKE_TORCH_LOG=1 logs allocations, fills
and graph captures and replays on stderr (what compare_torch.py's flush and graphs do).

For bench/train/torch_train.py it also has a shape-checking model, optimiser, loss, scaler and
compile (the training loop's control flow, the model's names and shapes, the report's fields),
and for bench/infer/baselines.py pinned host tensors, cpu() and non-blocking copies:
tensors carry shapes, no values; a loss is 2.0 and a comparison counts half its elements as
equal. FAKE_TORCH_SCALE_BACKOFF=N makes the grad scaler halve its scale on its first N updates.
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


def _log(message):
    if os.environ.get("FAKE_TORCH_LOG") == "1":
        import sys  # noqa: PLC0415
        print(f"fake torch: {message}", file=sys.stderr)


def _fail_for(dtype):
    if dtype is not None and dtype == os.environ.get("FAKE_TORCH_FAIL"):
        raise RuntimeError(f"fake torch: {dtype} is not supported here")


int64 = "int64"


class Tensor:
    def __init__(self, shape, dtype, device="cpu"):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device

    def fill_(self, value):
        assert 0 <= value <= 255, value
        _log(f"fill_ {self.shape} with {value}")
        return self

    def contiguous(self, memory_format=None):
        assert memory_format in (None, channels_last)
        return self

    # ---- what bench/train/torch_train.py uses: shapes only ----
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
            shape = tuple(shape[0])
        assert _count(shape) == _count(self.shape), (shape, self.shape)
        return Tensor(shape, self.dtype, self.device)

    def to(self, target, non_blocking=False):
        assert not non_blocking or (target == "cuda" and getattr(self, "pinned", False)), \
            "non_blocking copies need pinned host memory"
        if target in ("cuda", "cpu"):
            return Tensor(self.shape, self.dtype, target)
        return Tensor(self.shape, target, self.device)

    def cpu(self):
        return self.to("cpu")

    def pin_memory(self):
        assert self.device == "cpu"
        pinned = Tensor(self.shape, self.dtype, self.device)
        pinned.pinned = True
        return pinned

    def float(self):
        return self.to(float32)

    def _same(self, other):
        if isinstance(other, Tensor):
            assert other.shape == self.shape and other.device == self.device, (self.shape, other.shape)
        return Tensor(self.shape, self.dtype, self.device)

    __truediv__ = __sub__ = _same

    def __getitem__(self, key):
        if isinstance(key, slice):
            return Tensor((len(range(*key.indices(self.shape[0]))),) + self.shape[1:], self.dtype, self.device)
        assert isinstance(key, Tensor) and key.dtype == int64 and key.device == self.device
        return Tensor(key.shape + self.shape[1:], self.dtype, self.device)

    def argmax(self, dim):
        assert dim == 1 and len(self.shape) == 2
        return Tensor(self.shape[:1], int64, self.device)

    def __eq__(self, other):
        assert isinstance(other, Tensor) and other.shape == self.shape
        return Tensor(self.shape, "bool", self.device)

    __hash__ = object.__hash__

    def sum(self):
        return _Scalar(self.shape[0] // 2)


class _Scalar(Tensor):
    def __init__(self, value):
        super().__init__((), float32, "cuda")
        self.value = value

    def item(self):
        return self.value

    def backward(self):
        pass


def _count(shape):
    total = 1
    for n in shape:
        total *= n
    return total


def frombuffer(buffer, dtype):
    assert isinstance(buffer, bytearray) and dtype in (uint8, float32)
    return Tensor((len(buffer) // (4 if dtype == float32 else 1),), dtype)


def randperm(n, device=None, generator=None):
    assert device == "cuda" and isinstance(generator, Generator)
    return Tensor((n,), int64, device)


def manual_seed(seed):
    assert isinstance(seed, int)


def relu(x):
    return x


def flatten(x, start):
    assert start == 1
    return Tensor((x.shape[0], _count(x.shape[1:])), x.dtype, x.device)


def compile(model, mode=None, dynamic=None):  # noqa: A001 (mirrors torch.compile)
    assert mode in (None, "reduce-overhead", "max-autotune") and dynamic in (None, False, True)
    return model


class _Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class no_grad(_Context):  # noqa: N801
    pass


class autocast(_Context):  # noqa: N801
    def __init__(self, device, dtype):
        assert device == "cuda" and dtype in (float16, bfloat16)
        _fail_for(dtype)


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
    _log(f"empty {shape} {dtype}")
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


class _Module:
    """torch.nn.Module: named parameters (shapes), train/eval, to, load_state_dict."""

    def __init__(self):
        object.__setattr__(self, "_children", {})
        object.__setattr__(self, "_params", {})
        self.training = True

    def __setattr__(self, name, value):
        if isinstance(value, _Module):
            self._children[name] = value
        object.__setattr__(self, name, value)

    def state_shapes(self):
        shapes = {name: shape for name, shape in self._params.items()}
        for child_name, child in self._children.items():
            shapes.update({f"{child_name}.{k}": v for k, v in child.state_shapes().items()})
        return shapes

    def parameters(self):
        return [Tensor(shape, float32, "cuda") for shape in self.state_shapes().values()]

    def to(self, device):
        assert device == "cuda"
        return self

    def train(self, mode=True):
        self.training = mode
        for child in self._children.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def load_state_dict(self, state, strict=True):
        assert strict
        found = {name: tuple(t.shape) for name, t in state.items()}
        if found != self.state_shapes():
            raise RuntimeError(f"Error(s) in loading state_dict: {found} != {self.state_shapes()}")

    def __call__(self, x):
        assert x.device == "cuda"
        return self.forward(x)


class nn:  # noqa: N801
    Module = _Module

    class Conv2d(_Module):
        def __init__(self, cin, cout, k, padding=0):
            super().__init__()
            self._params.update(weight=(cout, cin, k, k), bias=(cout,))
            self.padding = padding

        def forward(self, x):
            n, c, h, w = x.shape
            cout, cin, k, _ = self._params["weight"]
            assert c == cin, (x.shape, cin)
            size = lambda v: v + 2 * self.padding - k + 1  # noqa: E731
            return Tensor((n, cout, size(h), size(w)), x.dtype, x.device)

    class Linear(_Module):
        def __init__(self, fin, fout):
            super().__init__()
            self._params.update(weight=(fout, fin), bias=(fout,))

        def forward(self, x):
            assert x.shape[1:] == (self._params["weight"][1],), x.shape
            return Tensor((x.shape[0], self._params["weight"][0]), x.dtype, x.device)

    class MaxPool2d(_Module):
        def __init__(self, k):
            super().__init__()
            self.k = k

        def forward(self, x):
            n, c, h, w = x.shape
            return Tensor((n, c, h // self.k, w // self.k), x.dtype, x.device)

    class Dropout(_Module):
        def __init__(self, p):
            super().__init__()
            assert 0 <= p < 1

        def forward(self, x):
            return x

    class CrossEntropyLoss:
        def __call__(self, logits, target):
            assert logits.shape == (target.shape[0], 10) and target.dtype == int64
            return _Scalar(2.0)

    class functional:  # noqa: N801
        @staticmethod
        def conv2d(x, w, padding=0, stride=1):
            _fail_for(x.dtype)
            n, c, h, width = x.shape
            k, c_w, r, s = w.shape
            assert c == c_w
            return Tensor((n, k, (h + 2 * padding - r) // stride + 1,
                           (width + 2 * padding - s) // stride + 1), x.dtype)


class optim:  # noqa: N801
    class AdamW:
        def __init__(self, params, lr, weight_decay):
            assert params and lr > 0 and weight_decay >= 0
            self.steps = 0

        def zero_grad(self):
            pass

        def step(self):
            self.steps += 1


class amp:  # noqa: N801
    class GradScaler:
        def __init__(self, device, enabled=True):
            assert device == "cuda"
            self.enabled = enabled
            self.scale_value = 65536.0 if enabled else 1.0
            self.backoffs = int(os.environ.get("FAKE_TORCH_SCALE_BACKOFF", "0"))

        def scale(self, loss):
            return loss

        def step(self, optimizer):
            optimizer.step()

        def update(self):
            if self.enabled and self.backoffs > 0:
                self.backoffs -= 1
                self.scale_value /= 2

        def get_scale(self):
            return self.scale_value

        def is_enabled(self):
            return self.enabled


class cuda:  # noqa: N801
    @staticmethod
    def manual_seed_all(seed):
        assert isinstance(seed, int)

    @staticmethod
    def is_available():
        return os.environ.get("FAKE_TORCH_NO_CUDA") != "1"

    @staticmethod
    def synchronize():
        assert cuda._capturing is None, "synchronize during a graph capture"

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

    @staticmethod
    def set_device(index):
        assert index == 0

    class nccl:  # noqa: N801
        @staticmethod
        def version():
            return (2, 28, 9)

    @staticmethod
    def get_device_properties(index):
        assert index == 0
        if os.environ.get("FAKE_TORCH_NO_L2") == "1":
            return _Flags(name="Fake GPU")
        return _Flags(name="Fake GPU", L2_cache_size=50 * 1024 * 1024)

    class Stream:
        def wait_stream(self, other):
            assert isinstance(other, cuda.Stream)

    _capturing = None

    @staticmethod
    def current_stream():
        return cuda.Stream()

    @staticmethod
    def stream(s):
        assert isinstance(s, cuda.Stream)
        return _Context()

    class CUDAGraph:
        def __init__(self):
            self.captured = False

        def replay(self):
            assert self.captured, "replay before capture"
            _log("graph replay")

    class graph:  # noqa: N801 (mirrors torch.cuda.graph, the capture context)
        def __init__(self, g):
            assert isinstance(g, cuda.CUDAGraph) and not g.captured
            self.g = g

        def __enter__(self):
            assert cuda._capturing is None, "nested capture"
            cuda._capturing = self.g
            _log("graph capture begins")
            return self

        def __exit__(self, *exc):
            cuda._capturing = None
            self.g.captured = True
            _log("graph capture ends")
            return False

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


def zeros(*shape, device=None, dtype=None):
    _fail_for(dtype)
    return Tensor(shape, dtype, device)


class distributed:  # noqa: N801 (mirrors torch.distributed: one process group at a time)
    _group = None

    @staticmethod
    def is_available():
        return os.environ.get("FAKE_TORCH_NO_DISTRIBUTED") != "1"

    @staticmethod
    def is_nccl_available():
        return True

    @staticmethod
    def init_process_group(backend, init_method=None, rank=None, world_size=None):
        assert backend == "nccl" and init_method.startswith("file://"), (backend, init_method)
        assert rank == 0 and world_size == 1 and distributed._group is None
        distributed._group = init_method

    @staticmethod
    def all_reduce(tensor):
        assert distributed._group is not None and tensor.device == "cuda" and tensor.dtype == float32

    @staticmethod
    def destroy_process_group():
        assert distributed._group is not None
        distributed._group = None
        import sys  # noqa: PLC0415
        print("fake torch: process group destroyed", file=sys.stderr)
