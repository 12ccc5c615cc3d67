# SPDX-License-Identifier: MIT
# Copyright (C) 2026 The vtpu authors
"""vtpu: run ONNX models and XLA HLO on emulated TPU cores, from numpy.

An ONNX Runtime-style session over libvtpu. Switching an ONNX Runtime
script over takes the import and the constructor, nothing else::

    import vtpu
    sess = vtpu.InferenceSession("model.onnx")
    name = sess.get_inputs()[0].name
    y, = sess.run(None, {name: x})

``backend`` chooses where models run: ``"accel"`` on /dev/accel/accelN
(vtpu.ko), ``"host"`` on the same executor in this process, ``"auto"``
(the default, or the VTPU_BACKEND environment variable) accel when a
device exists, else host.

Inputs are converted as vtpu-run converts them, by libvtpu's own rules:
the device computes in float32 and int32, so float64 and float16 inputs
round to float32, int64 (and the narrow integers) must fit an int32
(InvalidArgumentError otherwise, never a silent wrap), bool becomes 0/1.
Outputs come back in the type the model declares.

Lower level: Client (devices, statistics, profiles, compile, device
buffers), Executable (cost model, run) and DeviceBuffer.

Errors are Error subclasses carrying libvtpu's message:
UnsupportedError (also a NotImplementedError), InvalidArgumentError (a
ValueError), DeviceNotFoundError, OutOfMemoryError (a MemoryError) and
DeviceTimeoutError (a TimeoutError).

The interpreter lock is released while a model compiles or runs, and
sessions, clients and executables may be used from several threads.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import _vtpu
from ._vtpu import (DeviceNotFoundError, DeviceTimeoutError, Error,
                    InvalidArgumentError, OutOfMemoryError, UnsupportedError,
                    load_tensor)

__all__ = [
    "InferenceSession", "NodeArg", "Client", "Executable", "DeviceBuffer",
    "DeviceInfo", "Stats", "DeviceStats", "Cost", "TensorSpec",
    "Error", "UnsupportedError", "InvalidArgumentError",
    "DeviceNotFoundError", "OutOfMemoryError", "DeviceTimeoutError",
    "load_tensor", "get_available_providers",
]

# Device types and the host element types (ONNX numbering) they hold.
_DEVICE_ELEM = {"f32": 1, "bf16": 16, "s32": 6, "s64": 7, "pred": 9}
_ELEM_NAME = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16",
              6: "int32", 7: "int64", 8: "string", 9: "bool", 10: "float16",
              11: "double", 12: "uint32", 13: "uint64", 16: "bfloat16"}
# Elements numpy can hold (no bfloat16, no strings here).
_NUMPY_ELEMS = {1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13}
# Executables kept per session for inputs of other shapes or values.
_SESSION_CACHE = 16


@dataclasses.dataclass(frozen=True)
class NodeArg:
    """A model input or output, as onnxruntime.NodeArg describes it.

    ``shape`` lists the dims: ints where static, the symbolic name (a
    str) or None where not; ``type`` is ONNX Runtime's string, such as
    "tensor(float)".
    """
    name: str
    shape: Optional[List[Union[int, str, None]]]
    type: str


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """An executable's parameter or output: device type and dims."""
    dtype: str
    shape: tuple


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """One device, as struct vtpu_device_info gives it."""
    index: int
    name: str
    cores: int
    hbm_total: int
    hbm_free: int
    hbm_largest_free: int
    host_bytes: int
    vmem_size: int
    jobs_in_flight: int
    jobs_completed: int


@dataclasses.dataclass(frozen=True)
class DeviceStats:
    """Per-device figures of struct vtpu_stats."""
    utilisation: float
    busy_ns: int
    executions: int
    hbm_used: int
    hbm_total: int
    memory_utilisation: float
    pool_idle: int
    pool_reuses: int
    pool_creates: int


@dataclasses.dataclass(frozen=True)
class Stats:
    """A client's statistics (struct vtpu_stats)."""
    executions: int
    failures: int
    retries: int
    avg_execution_ns: float
    error_rate: float
    cache_hits: int
    cache_misses: int
    cache_hit_rate: float
    program_loads: int
    weight_uploads: int
    weight_bytes: int
    devices: List[DeviceStats]


@dataclasses.dataclass(frozen=True)
class Cost:
    """The compiler's cost model of an executable (struct vtpu_cost)."""
    flops: float
    bytes_moved: float
    est_time_ns: float
    code_bytes: int
    const_bytes: int
    weights_bytes: int
    param_bytes: int
    output_bytes: int
    scratch_bytes: int
    scratch_lower_bound: int
    vmem_bytes: int
    insn_count: int
    kernel_count: int


def get_available_providers() -> List[str]:
    """ONNX Runtime's call: the backends a session may name."""
    return ["auto", "accel", "host"]


def _ort_type(elem: int) -> str:
    return "tensor(%s)" % _ELEM_NAME.get(elem, "undefined")


class Executable:
    """A compiled program; made by Client.compile()."""

    def __init__(self, client: "Client", exe: Any):
        self._client = client
        self._exe = exe

    @property
    def inputs(self) -> List[TensorSpec]:
        """The parameters: device type and dims of each."""
        return [TensorSpec(t, d) for t, d in self._exe.inputs]

    @property
    def outputs(self) -> List[TensorSpec]:
        """The outputs: device type and dims of each."""
        return [TensorSpec(t, d) for t, d in self._exe.outputs]

    def cost(self) -> Cost:
        """FLOPs, bytes moved, estimated time and memory by kind."""
        return Cost(**self._exe.cost())

    def run(self, *arrays: Any, output_elems: Optional[list] = None
            ) -> List[np.ndarray]:
        """Runs on numpy arrays, one per parameter; returns the outputs.

        Inputs convert to the device's types by libvtpu's rules; outputs
        come back in the device's types (bf16 as float32) unless
        ``output_elems`` names ONNX element types for them.
        """
        return self._exe.run(arrays, output_elems)

    def __repr__(self) -> str:
        return "<vtpu.Executable %d inputs, %d outputs>" % (
            len(self._exe.inputs), len(self._exe.outputs))


class DeviceBuffer:
    """Device memory holding one array; see Client.put() and empty().

    ``numpy()`` downloads it into a new array; numpy memory is copied
    straight to and from the device with no staging copy in between.
    """

    def __init__(self, buf: Any, shape: tuple, dtype: np.dtype):
        self._buf = buf
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def size(self) -> int:
        """Bytes."""
        return self._buf.size

    @property
    def placement(self) -> str:
        """Where it lives: "hbm" or "host" (the backing store)."""
        return self._buf.placement

    def upload(self, array: Any) -> None:
        """Copies ``array`` (of this buffer's dtype and size) in."""
        a = np.ascontiguousarray(array, dtype=self.dtype)
        if a.nbytes != self.size:
            raise InvalidArgumentError(
                "array of %d bytes for a buffer of %d" % (a.nbytes, self.size))
        self._buf.upload(a)

    def numpy(self) -> np.ndarray:
        """The contents as a new array of this buffer's shape and dtype."""
        return self._buf.download(np.empty(self.shape, self.dtype))

    def __repr__(self) -> str:
        return "<vtpu.DeviceBuffer %s %s in %s>" % (
            self.shape, self.dtype, self.placement)


_DEVICE_DTYPES = {"f32": np.float32, "s32": np.int32, "s64": np.int64,
                  "pred": np.bool_}


class Client:
    """A libvtpu client: devices, compilation, buffers, runs, profiles.

    ``backend`` is "auto", "accel" or "host"; ``host_devices``,
    ``host_cores`` and ``host_hbm_size`` shape the host backend's devices;
    ``cache_dir`` is the compile cache's directory ("" for none).
    """

    def __init__(self, backend: str = "auto", *, host_devices: int = 0,
                 host_cores: int = 0, host_hbm_size: int = 0,
                 cache_dir: Optional[str] = None, max_retries: int = -1):
        try:
            self._c = _vtpu.Client(backend, host_devices, host_cores,
                                   host_hbm_size, cache_dir, max_retries)
        except DeviceNotFoundError as e:
            raise DeviceNotFoundError(
                '%s; from Python: vtpu.Client(backend="host") or '
                'InferenceSession(..., backend="host")' % e) from None

    @property
    def backend(self) -> str:
        """The backend in use: "accel" or "host"."""
        return self._c.backend

    @property
    def devices(self) -> List[DeviceInfo]:
        """The devices, with their memory and load."""
        return [DeviceInfo(**d) for d in self._c.devices()]

    def stats(self) -> Stats:
        """Executions, average time, cache hit rate, per-device figures."""
        s = self._c.stats()
        s["devices"] = [DeviceStats(**d) for d in s["devices"]]
        return Stats(**s)

    @contextlib.contextmanager
    def profile(self, path: Union[str, os.PathLike]) -> Iterator[None]:
        """Records everything inside the ``with`` block into ``path``.

        The file is Chrome trace JSON (Perfetto opens it): compiles,
        allocations, submits, device jobs and per-op spans. It is written
        when the block ends, also when it raises.
        """
        p = self._c.profile_start()
        try:
            yield
        finally:
            p.stop(os.fspath(path))

    def compile(self, model: Union[str, bytes, os.PathLike], *,
                feeds: Optional[Dict[str, Any]] = None) -> Executable:
        """Compiles a model into an Executable.

        ``model`` is XLA HLO text (a str), a serialized ONNX model
        (bytes) or a path to a .onnx or .hlo file. For ONNX, ``feeds``
        ({name: array}) binds symbolic dims and shape-like inputs.
        """
        if isinstance(model, os.PathLike) or (
                isinstance(model, str) and model.endswith((".onnx", ".hlo"))
                and os.path.exists(model)):
            with open(model, "rb") as f:
                data = f.read()
            if str(model).endswith(".hlo"):
                return Executable(self, self._c.compile_hlo(data))
            model = data
        if isinstance(model, str):
            return Executable(self, self._c.compile_hlo(model))
        fl = [(k, np.asarray(v)) for k, v in (feeds or {}).items()]
        return Executable(self, self._c.compile_onnx(
            bytes(model), fl, with_values=bool(fl)))

    def put(self, array: Any, placement: str = "auto") -> DeviceBuffer:
        """A device buffer holding a copy of ``array``."""
        a = np.ascontiguousarray(array)
        b = self.empty(a.shape, a.dtype, placement)
        b._buf.upload(a)
        return b

    def empty(self, shape: Sequence[int], dtype: Any = np.float32,
              placement: str = "auto") -> DeviceBuffer:
        """An uninitialised device buffer for an array of shape, dtype.

        ``placement`` is "auto" (HBM, else the backing store), "hbm" or
        "host".
        """
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        return DeviceBuffer(self._c.buffer(n, placement), shape, dt)

    def empty_for(self, spec: TensorSpec) -> DeviceBuffer:
        """A buffer for an executable's parameter or output."""
        if spec.dtype not in _DEVICE_DTYPES:
            raise UnsupportedError("no numpy type for %s" % spec.dtype)
        return self.empty(spec.shape, _DEVICE_DTYPES[spec.dtype])

    def execute(self, exe: Executable, inputs: Sequence[DeviceBuffer],
                outputs: Sequence[DeviceBuffer]) -> None:
        """Runs ``exe`` on device buffers, in the device's types."""
        self._c.execute(exe._exe, [b._buf for b in inputs],
                        [b._buf for b in outputs])

    def __repr__(self) -> str:
        return "<vtpu.Client backend=%s, %d device(s)>" % (
            self.backend, len(self._c.devices()))


def _read_model(path_or_bytes: Union[str, bytes, os.PathLike]) -> bytes:
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes)
    with open(path_or_bytes, "rb") as f:
        return f.read()


class InferenceSession:
    """An ONNX model ready to run, as onnxruntime.InferenceSession.

    ``path_or_bytes`` is a .onnx path or the model's bytes. ``backend``
    is "auto", "accel" or "host" (``providers``, ONNX Runtime's list, may
    name one of them too); ``client`` shares an existing Client. Models
    with symbolic dims or inputs the graph needs as constants (a Reshape
    target, say) are compiled for each new input shape (and, for those,
    values) at run(), through libvtpu's compile cache.
    """

    def __init__(self, path_or_bytes: Union[str, bytes, os.PathLike],
                 sess_options: Any = None, providers: Any = None,
                 provider_options: Any = None, *, backend: str = "auto",
                 client: Optional[Client] = None, **kwargs: Any):
        if providers and isinstance(providers, (list, tuple)):
            names = [p if isinstance(p, str) else p[0] for p in providers]
            backend = next((p for p in names if p in ("accel", "host")),
                           backend)
        self._setup(client or Client(backend))
        self._data = _read_model(path_or_bytes)
        ins, outs = _vtpu.model_info(self._data)
        self._inputs = [NodeArg(v["name"], v["shape"], _ort_type(v["elem"]))
                        for v in ins]
        self._outputs = [NodeArg(v["name"], v["shape"], _ort_type(v["elem"]))
                         for v in outs]
        self._in_elems = [v["elem"] for v in ins]
        self._out_elems = [v["elem"] if v["elem"] in _NUMPY_ELEMS else None
                           for v in outs]
        try:
            self._exe = Executable(self._client,
                                   self._client._c.compile_onnx(self._data))
        except UnsupportedError:
            # Symbolic dims and shape-like inputs are bound at run();
            # a model with neither is simply unsupported.
            if not any(self._maybe_bound(i) for i in range(len(ins))):
                raise

    def _maybe_bound(self, i: int) -> bool:
        shape = self._inputs[i].shape
        return (shape is None or any(not isinstance(d, int) for d in shape)
                or self._in_elems[i] in (6, 7))

    def _setup(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._cache: "OrderedDict[tuple, Executable]" = OrderedDict()
        self._exe: Optional[Executable] = None

    def _init_executable(self, exe: Executable) -> None:
        self._exe = exe
        self._inputs = [NodeArg("input_%d" % i, list(s.shape),
                                _ort_type(_DEVICE_ELEM[s.dtype]))
                        for i, s in enumerate(exe.inputs)]
        self._outputs = [NodeArg("output_%d" % i, list(s.shape),
                                 _ort_type(_DEVICE_ELEM[s.dtype]))
                         for i, s in enumerate(exe.outputs)]
        self._in_elems = [_DEVICE_ELEM[s.dtype] for s in exe.inputs]
        self._out_elems = [None] * len(exe.outputs)

    @classmethod
    def from_hlo(cls, text: str, *, backend: str = "auto",
                 client: Optional[Client] = None) -> "InferenceSession":
        """A session over an XLA HLO text module (inputs "input_0", ...)."""
        self = cls.__new__(cls)
        self._setup(client or Client(backend))
        self._init_executable(self._client.compile(text))
        return self

    @property
    def client(self) -> Client:
        """The Client the session runs on."""
        return self._client

    def get_inputs(self) -> List[NodeArg]:
        """The inputs the caller feeds (initializers are not listed)."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """The backend in use, as ONNX Runtime lists its providers."""
        return [self._client.backend]

    def _feeds(self, input_feed: Dict[str, Any]) -> List[np.ndarray]:
        names = [a.name for a in self._inputs]
        extra = sorted(set(input_feed) - set(names))
        missing = [n for n in names if n not in input_feed]
        if extra or missing:
            raise InvalidArgumentError(
                "input_feed: %s%s%s (the model's inputs: %s)" % (
                    "unknown %s" % ", ".join(extra) if extra else "",
                    "; " if extra and missing else "",
                    "missing %s" % ", ".join(missing) if missing else "",
                    ", ".join(names)))
        arrays = []
        for a in self._inputs:
            x = np.asarray(input_feed[a.name])
            if a.shape is not None:
                want = a.shape
                bad = len(want) != x.ndim or any(
                    isinstance(w, int) and w != d for w, d in zip(want, x.shape))
                if bad:
                    raise InvalidArgumentError(
                        "input %s has shape %s, the model wants %s" % (
                            a.name, list(x.shape), want))
            arrays.append(x)
        return arrays

    def _executable(self, arrays: List[np.ndarray]) -> Executable:
        if self._exe is not None:
            return self._exe
        shapes = tuple((x.shape, x.dtype.str) for x in arrays)
        with self._lock:
            exe = self._cache.get(shapes)
            if exe is not None:
                self._cache.move_to_end(shapes)
                return exe
        feeds = [(a.name, x) for a, x in zip(self._inputs, arrays)]
        c = self._client._c
        try:
            exe = Executable(self._client, c.compile_onnx(self._data, feeds))
            key = shapes
        except UnsupportedError:
            # The graph needs some input's values at compile time: it is
            # specialised on them, so they are part of the key.
            key = shapes + tuple(x.tobytes() for x in arrays)
            with self._lock:
                exe = self._cache.get(key)
            if exe is None:
                exe = Executable(self._client, c.compile_onnx(
                    self._data, feeds, with_values=True))
        with self._lock:
            self._cache[key] = exe
            while len(self._cache) > _SESSION_CACHE:
                self._cache.popitem(last=False)
        return exe

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Dict[str, Any], run_options: Any = None
            ) -> List[np.ndarray]:
        """Runs the model; returns the outputs asked for as numpy arrays.

        ``output_names`` None means all outputs, in the model's order.
        ``input_feed`` maps every input's name to an array (anything
        numpy.asarray takes); symbolic dims are bound from it.
        """
        arrays = self._feeds(input_feed)
        outs = self._executable(arrays)._exe.run(arrays, self._out_elems)
        if output_names is None:
            return outs
        index = {a.name: i for i, a in enumerate(self._outputs)}
        try:
            return [outs[index[n]] for n in output_names]
        except KeyError as e:
            raise InvalidArgumentError(
                "no output %s (the model's outputs: %s)" % (
                    e, ", ".join(index))) from None

    def __repr__(self) -> str:
        return "<vtpu.InferenceSession %d inputs, %d outputs on %s>" % (
            len(self._inputs), len(self._outputs), self._client.backend)
