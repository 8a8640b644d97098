"""Prepared calls (onnx_cupy.core.calls): keys that tell every value apart by type and bits and
never read a device array, prepared calls that run on their input's device whichever is
current, and scratch arrays kept per stream (on the stand-in cupy)."""
from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
from helpers import fake_cupy

import onnx_cupy as oc
from onnx_cupy.core import calls


@dataclasses.dataclass(frozen=True)
class Source:
    """A frozen dataclass key part (as Resize's coordinate sources)."""

    shift: float
    steps: tuple[float, ...]


# values that compare equal (or nearly) but are not the same value: each must key apart
APART = [
    pytest.param(2, 2.0, id="int-float"),
    pytest.param(1, True, id="int-bool"),
    pytest.param(2, np.int64(2), id="int-numpy-int"),
    pytest.param(2.0, np.float64(2.0), id="float-numpy-float"),
    pytest.param(np.int64(2), np.uint64(2), id="numpy-int64-uint64"),
    pytest.param(np.float64(2.0), np.array(2.0), id="numpy-scalar-0d-array"),
    pytest.param(0.0, -0.0, id="zero-signs"),
    pytest.param([2, 2], (2, 2), id="list-tuple"),
    pytest.param([2, 2], [2.0, 2], id="list-float-item"),
    pytest.param([1, 1], [True, True], id="list-bool-items"),
    pytest.param([0.5, 0.0], [0.5, -0.0], id="list-zero-signs"),
    pytest.param({"a": [1]}, {"b": [1]}, id="dict-names"),
    pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, id="dict-order"),
    pytest.param(np.array([1, 2]), np.array([1, 2], np.int32), id="array-dtype"),
    pytest.param(np.array([1, 2]), np.array([[1, 2]]), id="array-shape"),
    pytest.param(Source(0.0, (1.0,)), Source(-0.0, (1.0,)), id="dataclass-zero-signs"),
    pytest.param(Source(1.0, (1.0,)), (1.0, (1.0,)), id="dataclass-tuple"),
]


@pytest.mark.parametrize("a, b", APART)
def test_frozen_tells_values_apart(a, b):
    assert calls.frozen(a) != calls.frozen(b)
    assert calls.frozen((a,)) != calls.frozen((b,))   # inside a sequence too


@pytest.mark.parametrize("value", [
    2, "NOTSET", None, 2.5, -0.0, float("inf"), [3, 3], (1, 2.5, None), {"p": 2, "axes": [0]},
    np.int64(3), np.array([1.5, 2.5], np.float32), Source(0.5, (2.0, 3.0)), b"\x00\x01",
], ids=repr)
def test_frozen_keys_equal_values_alike(value):
    """A fresh copy of a value keys as the value itself (whatever objects the two share)."""
    assert calls.frozen(pickle_copy(value)) == calls.frozen(value)
    shared = [3, 3]
    assert calls.frozen((shared, shared)) == calls.frozen(([3, 3], [3, 3]))


def pickle_copy(value):
    import pickle

    return pickle.loads(pickle.dumps(value))


@pytest.mark.parametrize("value", [
    object(), lambda: 0, 1j, range(3), np.array([object()], dtype=object),
    np.zeros(1, np.dtype([("a", "<f4")])), [object()], {"a": [np.float64, 1]},
], ids=["object", "function", "complex", "range", "object-array", "structured-array",
        "object-in-list", "class-in-dict"])
def test_frozen_refuses_other_objects(value):
    with pytest.raises(calls.Unkeyed):
        calls.frozen(value)


def test_frozen_never_reads_a_device_array(request):
    """A CuPy array (here the stand-in's) in a key part makes the call unkeyed before any of
    its own code runs: no copy to the host, no synchronization."""
    fake = fake_cupy.install(request)
    a = fake.asarray(np.arange(4.0))
    since = len(fake.operations)
    for value in (a, [1, a], {"scales": a}, (Source(1.0, (2.0,)), [a])):
        with pytest.raises(calls.Unkeyed):
            calls.frozen(value)
    assert fake.operations[since:] == []


def test_frozen_in_threads():
    """Each thread pickles with its own pickler: keys made at once in several threads are
    each their own value's."""
    values = [[i, float(i), {"k": [i] * 3}] for i in range(64)]
    expected = [calls.frozen(v) for v in values]
    got: dict[int, list[object]] = {}
    start = threading.Barrier(4)

    def work(n: int) -> None:
        start.wait(timeout=10)
        got[n] = [calls.frozen(v) for v in values for _ in range(20)][::20]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[n] == expected for n in range(4))


X = np.zeros((2, 3, 4), np.float32)


@pytest.mark.parametrize("a, b", [
    pytest.param(np.array([1.0, 2.0]), [1.0, 2.0], id="array-list"),
    pytest.param(np.array([1.0, 2.0]), np.array([1.0, 2.0], np.float32), id="array-dtypes"),
    pytest.param(np.array([1, 2]), np.array([[1, 2]]), id="array-shapes"),
    pytest.param([1, 2], (1, 2), id="list-tuple"),
    pytest.param(None, np.array([], np.float64), id="none-empty-array"),
])
def test_key_tells_vectors_apart(a, b):
    for before, after in ((None, None), ([2.0], None), (None, np.array([3]))):
        ka = calls.key("numpy", (X,), ("Op", 1, {"m": 0}), vectors=(before, a, after))
        kb = calls.key("numpy", (X,), ("Op", 1, {"m": 0}), vectors=(before, b, after))
        assert ka is not None and kb is not None and ka != kb


def test_key_of_equal_vectors_and_layouts():
    def k(*vectors, x=X):
        return calls.key("numpy", (x,), ("Op", 1, {"m": [1, 2]}), vectors=vectors)

    assert k(np.array([1.0, 2.0]), None) == k(np.array([1.0, 2.0]), None)
    assert k([1.0, 2.0], None) == k([1.0, 2.0], None)
    assert k(None, [1.0, 2.0]) != k([1.0, 2.0], None)
    assert k(np.array([1.0]), None) != k(None, np.array([1.0]))
    assert k([1.0], x=X) != k([1.0], x=X.transpose(0, 2, 1)) != k([1.0], x=X.astype(np.float64))
    assert calls.key("numpy", (X,), ("Op", 1, 2, "a")) == calls.key("numpy", (X,),
                                                                    ("Op", 1, 2, "a"))
    assert calls.key("numpy", (X,), ("Op", 1, 2.0)) != calls.key("numpy", (X,), ("Op", 1, 2))
    assert calls.key("numpy", (X,), ([object()],)) is None


@pytest.mark.parametrize("a, b", [
    pytest.param({"mode": "linear"}, {"mode": "nearest"}, id="values"),
    pytest.param({"mode": "linear"}, {"kind": "linear"}, id="names"),
    pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, id="order"),   # misses, never a wrong hit
    pytest.param({"a": 1}, {"a": True}, id="int-bool"),
    pytest.param({"a": 1}, {"a": 1.0}, id="int-float"),
    pytest.param({"a": 1}, {"a": [1]}, id="int-list"),
    pytest.param({"a": 1}, {"a": 1, "b": None}, id="sizes"),
    pytest.param({"a": [1, 2]}, {"a": (1, 2)}, id="list-tuple"),
    pytest.param({"a": [1, 2]}, {"a": [1.0, 2]}, id="list-of-int-float"),
    pytest.param({"a": [1, 2]}, {"a": [True, 2]}, id="list-of-int-bool"),
    pytest.param({"a": [1, 2]}, {"a": [[1, 2]]}, id="list-nested"),
    pytest.param({"a": [1, 2], "b": 3}, {"a": [1, 2, 3]}, id="list-sizes"),
    pytest.param({"a": [1, 2]}, {"a": np.array([1, 2])}, id="list-array"),
])
def test_key_tells_attribute_dicts_apart(a, b):
    """Dicts of ints, strings and None key as their size, names and values, without a pickle;
    any other value (a list among them) pickles the parts: equal keys only for equal dicts, in
    the same order."""
    ka, kb = (calls.key("numpy", (X,), ("Op", 1, d)) for d in (a, b))
    assert ka is not None and kb is not None and ka != kb
    assert ka == calls.key("numpy", (X,), ("Op", 1, dict(a)))
    plain = calls.key("numpy", (X,), ("Op", 1, {"m": "x", "n": 2}))
    assert plain is not None and plain[-1] == ("Op", 1, 2, "m", "n", "x", 2)


def test_key_of_further_arrays():
    grid = np.zeros((2, 4, 2), np.float32)
    key = calls.key("numpy", (X, grid), ("Op",))
    assert key == calls.key("numpy", (X, grid.copy()), ("Op",))
    assert key != calls.key("numpy", (X, grid.astype(np.float64)), ("Op",))
    assert key != calls.key("numpy", (X, grid[:, ::2]), ("Op",))
    assert key != calls.key("numpy", (X,), ("Op",))


P3 = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}


@pytest.fixture
def fake(request):
    return fake_cupy.install(request)


@pytest.mark.parametrize("call", [
    pytest.param(lambda x: oc.average_pool(x, **P3), id="average_pool"),
    pytest.param(lambda x: oc.resize(x, scales=[1, 1, 2, 2], mode="linear"), id="resize"),
    pytest.param(lambda x: oc.hardmax(x), id="hardmax"),
    pytest.param(lambda x: oc.global_max_pool(x), id="global_max_pool"),
])
def test_a_prepared_call_runs_on_its_inputs_device(fake, rng, call):
    """A repeated call on device 1's input runs there whether device 0 or 1 is current, and
    leaves the current device as it found it."""
    with fake.cuda.Device(1):
        x = fake.asarray(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    call(x)
    for current in (0, 1, 0):
        with fake.cuda.Device(current):
            since = len(fake.launches)
            y = call(x)
            assert fake.device == current
        assert y.device.id == 1
        assert {k.device for k in fake.launches[since:]} == {1}


def test_scratch_is_kept_per_stream(fake, rng):
    """MaxUnpool's winners (a zeroed scratch array) come from the current stream's workspace:
    the same buffer at each call on one stream, another on another stream, zeroed by a memset
    at every call."""
    x = fake.asarray(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    y, i = oc.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], return_indices=True)

    def winners():
        since, done = len(fake.launches), len(fake.operations)
        oc.max_unpool(y, i, kernel_shape=[2, 2], strides=[2, 2])
        scatter = next(k for k in fake.launches[since:] if "unpool_scatter" in k.expression)
        memsets = [o for o in fake.operations[done:] if o.kind == "memset"]
        assert len(memsets) == 1 and memsets[0].stream == scatter.stream
        return scatter.args[1]

    on_null = winners()
    assert winners() == on_null
    stream = fake.cuda.Stream()
    with stream:
        on_stream = winners()
        assert winners() == on_stream
    assert on_stream != on_null
    assert winners() == on_null


REENTER = {"on": True}


@dataclasses.dataclass(frozen=True)
class Reentrant:
    """A frozen dataclass whose field reads key another value while REENTER is on (as a
    finalizer or signal handler running an operator during a key's pickle would)."""

    steps: tuple[float, ...]

    def __getattribute__(self, name: str) -> object:
        if name == "steps" and REENTER["on"]:
            calls.frozen([7.5, {"other": (1, 2)}])
        return object.__getattribute__(self, name)


def test_frozen_inside_frozen(monkeypatch):
    """A key made while another is being pickled in the same thread leaves the outer one
    whole."""
    value = ("Op", [1.5, 2.5], Reentrant((0.5, 0.25)), {"p": 2})
    got = calls.frozen(value)
    monkeypatch.setitem(REENTER, "on", False)
    assert got == calls.frozen(value)


@pytest.mark.parametrize("a, b", [((1.5, "x"), (1.5, "x")), ((1.5, "x"), (-1.5, "x")),
                                  (np.float32(0.0), np.float32(-0.0))])
def test_a_keyed_part_keys_as_its_value(a, b):
    """A part keyed once keys as the value it wraps: equal values alike, others apart, and
    never equal to the bare value's key (a Keyed part and a plain one never share a call)."""
    assert (calls.frozen(calls.Keyed(a)) == calls.frozen(calls.Keyed(b))) == (
        calls.frozen(a) == calls.frozen(b))
    assert calls.frozen(calls.Keyed(a)) != calls.frozen(a)
    assert calls.Keyed(a).value is a
