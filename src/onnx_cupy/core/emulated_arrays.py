"""The emulated device's arrays (`ndarray`, named as CuPy's): NumPy views of the device's
memory that say which device they live on, with CuPy's array interface: NumPy's functions and
ufuncs (NEP 18, NEP 13), operators and methods as CuPy's own kernels (computed by the device,
onnx_cupy.core.emulated_device), `data` (a `MemoryPointer` with its memset), `get()` to the host
and no implicit conversion to NumPy."""
from __future__ import annotations

import ctypes
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .emulated_cuda import Device
    from .emulated_device import EmulatedDevice, _Block


class ndarray:
    """A device array (cupy.ndarray) of `owner` (an emulated device): `host`, the NumPy view of
    the device memory standing for it, on device `ordinal`; `block`, the allocation it keeps
    alive (None for a view of memory it does not own)."""

    __slots__ = ("_address", "_data", "block", "host", "ordinal", "owner")

    def __init__(self, owner: EmulatedDevice, host: np.ndarray, ordinal: int,
                 block: _Block | None = None, address: int | None = None) -> None:
        self.owner, self.host, self.ordinal, self.block = owner, host, ordinal, block
        self._address = address
        self._data: MemoryPointer | None = None

    def address(self) -> int:
        """The address of the first element (the host array's, standing for the device's)."""
        if self._address is None:
            self._address = int(self.host.__array_interface__["data"][0])
        return self._address

    # read at C speed, as CuPy's attributes are (the host-time benchmark times the library)
    shape = property(operator.attrgetter("host.shape"))
    dtype = property(operator.attrgetter("host.dtype"))
    strides = property(operator.attrgetter("host.strides"))
    size = property(operator.attrgetter("host.size"))
    ndim = property(operator.attrgetter("host.ndim"))
    nbytes = property(operator.attrgetter("host.nbytes"))
    itemsize = property(operator.attrgetter("host.itemsize"))
    flags = property(operator.attrgetter("host.flags"))

    @property
    def data(self) -> MemoryPointer:
        """Its MemoryPointer (made once: CuPy's is a cheap compiled object)."""
        pointer = self._data
        if pointer is None:
            pointer = self._data = MemoryPointer(self.owner, self.address(), self.ordinal)
        return pointer

    @property
    def device(self) -> Device:
        owner = self.owner
        return owner.Device(owner, self.ordinal)

    @property
    def T(self) -> ndarray:
        return self._view(self.host.T)

    def _view(self, host: np.ndarray) -> ndarray:
        return ndarray(self.owner, host, self.ordinal, self.block)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy's functions on device arrays as CuPy's (NEP 18)."""
        return self.owner.numpy_function(func.__name__, func, *args, **kwargs)

    def __array_ufunc__(self, ufunc: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        """NumPy's ufuncs on device arrays as CuPy's (NEP 13)."""
        if "out" in kwargs:
            kwargs["out"] = tuple(o for o in kwargs["out"])
            if len(kwargs["out"]) == 1:
                kwargs["out"] = kwargs["out"][0]
        return self.owner.numpy_function(ufunc.__name__, getattr(ufunc, method), *args,
                                         **kwargs)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("emulated cupy: implicit conversion to a NumPy array is not allowed (as "
                        "in CuPy); use .get()")

    def get(self) -> np.ndarray:
        """A host copy (a copy to the host, which waits for the device)."""
        owner = self.owner
        owner.note("to host", self.nbytes, "ndarray.get",
                   refused="a copy to host memory waits for the device")
        owner.note("synchronize", what="ndarray.get", refused="a synchronization")
        copy: np.ndarray = self.host.copy()
        return copy

    def copy(self) -> ndarray:
        return self.owner.elementwise("copy", np.copy, self)

    def fill(self, value: Any) -> None:
        self.owner.elementwise("fill", lambda a: np.asarray(value, a.dtype), self, out=self)

    def astype(self, dtype: Any, copy: bool = True) -> ndarray:
        if not copy and self.dtype == np.dtype(dtype):
            return self
        return self.owner.elementwise("astype", lambda a: a.astype(dtype), self)

    def view(self, dtype: Any) -> ndarray:
        return self._view(self.host.view(dtype))

    def reshape(self, *shape: Any) -> ndarray:
        return self._view(self.host.reshape(*shape))

    def transpose(self, *axes: Any) -> ndarray:
        return self._view(self.host.transpose(*axes))

    def __getitem__(self, key: Any) -> ndarray:
        return self._view(self.host[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        target = self._view(self.host[key])
        if isinstance(value, np.ndarray):
            self.owner.note("to device", value.nbytes, "ndarray.__setitem__",
                            refused="a copy from host memory (it is not in the graph)")
            target.host[...] = value
        else:
            self.owner.elementwise("copy", lambda v: v, value, out=target)

    def __getattr__(self, name: str) -> Any:
        """Any other method of CuPy's arrays as NumPy's, its array results on the device."""
        method = getattr(self.host, name, None) if not name.startswith("_") else None
        if method is None or not callable(method):
            raise AttributeError(f"emulated cupy array has no attribute {name!r}")

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.owner.numpy_function(name, lambda *a, **k: method(*a, **k), *args,
                                             **kwargs)
        return call

    def __len__(self) -> int:
        return len(self.host)

    def __bool__(self) -> bool:   # scalar conversions, as CuPy's
        return bool(self.host)

    def __int__(self) -> int:
        return int(self.host)

    def __float__(self) -> float:
        return float(self.host)

    def __neg__(self) -> ndarray:
        return self.owner.elementwise("negative", np.negative, self)

    def __abs__(self) -> ndarray:
        return self.owner.elementwise("absolute", np.absolute, self)

    def __invert__(self) -> ndarray:
        return self.owner.elementwise("invert", np.invert, self)

    def __repr__(self) -> str:
        return f"emulated cupy array on device {self.ordinal}: {self.host!r}"


_ARITHMETIC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
               "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power}
_COMPARISONS = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                "eq": np.equal, "ne": np.not_equal}


def _operators(name: str, fn: Callable[..., Any]) -> dict[str, Callable[..., Any]]:
    """A binary operator's methods as CuPy's elementwise kernels: forward, reflected and in
    place for arithmetic, forward for comparisons."""
    def forward(a: ndarray, b: Any) -> Any:
        return a.owner.elementwise(name, fn, a, b)

    def reflected(a: ndarray, b: Any) -> Any:
        return a.owner.elementwise(name, fn, b, a)

    def in_place(a: ndarray, b: Any) -> Any:
        return a.owner.elementwise(name, fn, a, b, out=a)
    if name in _COMPARISONS:
        return {f"__{name}__": forward}
    return {f"__{name}__": forward, f"__r{name}__": reflected, f"__i{name}__": in_place}


for _name, _fn in {**_ARITHMETIC, **_COMPARISONS}.items():
    for _method, _operator in _operators(_name, _fn).items():
        setattr(ndarray, _method, _operator)
del _name, _fn, _method, _operator


class MemoryPointer:
    """An array's `data`: its address `ptr` and `device_id`, and the memset of CuPy's
    MemoryPointer (noted as an operation of its device, setting the bytes where the device
    executes)."""

    __slots__ = ("device_id", "owner", "ptr")

    def __init__(self, owner: EmulatedDevice, ptr: int, device_id: int = 0) -> None:
        self.owner, self.ptr, self.device_id = owner, ptr, device_id

    def memset_async(self, value: int, size: int, stream: Any = None) -> None:
        owner = self.owner
        owner.note("memset", size, "MemoryPointer.memset_async")
        if size and owner.executing:
            at = self.ptr

            def run() -> None:
                ctypes.memset(at, value, size)
            owner.deferred(run, stream)
