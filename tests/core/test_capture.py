"""Capture-safe repeat calls, on the stand-in cupy (tests/helpers/standin.py), which records every
allocation, host-device copy, synchronization and event wait: after the first call of a
configuration, a call of every operator, of the PyTorch-style functions (max_unpool2d with its
per-plane indices among them) and of run_node allocates its outputs and launches, nothing else; a
sequence of such calls captured into a CUDA graph raises nothing and replays its launches; a first
call, which uploads and waits, is refused under capture."""
from __future__ import annotations

import weakref

import numpy as np
import onnx
import pytest
from helpers import fake_cupy

import onnx_cupy as oc
from onnx_cupy.core import calls, execution, workspaces
from onnx_cupy.nn import functional as F

P3 = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
NODE = onnx.helper.make_node("AveragePool", ["X"], ["Y"], **P3)
# id -> (input shape, dtype, call, outputs): the fast and generic paths of every family
CASES = {
    "average_pool-fast": ((1, 8, 9, 9), np.float32, lambda x: oc.average_pool(x, **P3), 1),
    "average_pool-generic-4d": ((1, 2, 3, 4, 5, 6), np.float16,
                                lambda x: oc.average_pool(x, kernel_shape=[2, 2, 2, 2]), 1),
    "lp_pool-generic-p3": ((2, 3, 7, 8), np.float32,
                           lambda x: oc.lp_pool(x, kernel_shape=[2, 3], p=3), 1),
    "max_pool-fast": ((1, 8, 9, 9), np.float32, lambda x: oc.max_pool(x, **P3), 1),
    "max_pool-generic-4d": ((1, 2, 3, 4, 5, 6), np.float32,
                            lambda x: oc.max_pool(x, kernel_shape=[2, 2, 2, 2]), 1),
    "max_pool-indices": ((1, 8, 9, 9), np.float32,
                         lambda x: oc.max_pool(x, return_indices=True, **P3), 2),
    "global_average_pool": ((2, 3, 5, 7), np.float16, oc.global_average_pool, 1),
    "global_max_pool-strided": ((2, 3, 5, 7), np.float32,
                                lambda x: oc.global_max_pool(x[:, :, ::2]), 1),
    "hardmax-rows": ((4, 1000), np.float32, oc.hardmax, 1),
    "hardmax-columns": ((8, 64, 32), np.float16, lambda x: oc.hardmax(x, axis=1), 1),
    "hardmax-scan": ((2, 4000, 3), np.float32, lambda x: oc.hardmax(x, axis=1), 1),
    "resize-linear-fast": ((1, 3, 8, 8), np.float32,
                           lambda x: oc.resize(x, scales=[1, 1, 2, 2], mode="linear"), 1),
    "resize-nearest-sizes": ((1, 3, 8, 8), np.uint8,
                             lambda x: oc.resize(x, sizes=np.array([1, 3, 5, 13])), 1),
    "resize-cubic-antialias": ((1, 3, 16, 16), np.float32, lambda x: oc.resize(
        x, scales=[1, 1, 0.25, 0.25], mode="cubic", antialias=1), 1),
    "resize-generic": ((2, 5, 3, 7), np.float32,
                       lambda x: oc.resize(x, scales=[1, 2, 1, 2], mode="linear"), 1),
    "upsample": ((1, 3, 8, 8), np.float32, lambda x: oc.upsample(x, [1.0, 1.0, 2.0, 3.0]), 1),
    "max_pool-then-max_unpool": ((1, 3, 8, 8), np.float32, lambda x: _unpooled(x), 3),
    "affine_grid-then-grid_sample": ((2, 2, 3), np.float32, lambda t: _warped(t), 2),
    "F.adaptive_avg_pool2d": ((2, 3, 9, 7), np.float32, lambda x: F.adaptive_avg_pool2d(x, 4), 1),
    "F.adaptive_max_pool2d-indices": ((2, 3, 9, 7), np.float32,
                                      lambda x: F.adaptive_max_pool2d(x, (4, 3), True), 2),
    "F.interpolate-area": ((1, 3, 9, 9), np.float32,
                           lambda x: F.interpolate(x, size=(4, 5), mode="area"), 1),
    "F.avg_pool2d-divisor_override": ((2, 3, 9, 9), np.float32,
                                      lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5), 1),
    "F.lp_pool2d": ((3, 9, 9), np.float32, lambda x: F.lp_pool2d(x, 2, 3, 2), 1),
    "F.max_pool2d-indices": ((2, 3, 9, 9), np.float32,
                             lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), 2),
    "F.interpolate-bilinear": ((1, 3, 8, 8), np.float32,
                               lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), 1),
    "F.interpolate-nearest": ((1, 3, 8, 8), np.float32,
                              lambda x: F.interpolate(x, size=(5, 11)), 1),
    "F.max_unpool2d-unbatched": ((3, 4, 5), np.float32, lambda x: F.max_unpool2d(
        x, _plane_indices(x, 9 * 10), 2, output_size=(9, 10)), 1),
    "F.max_pool2d-then-F.max_unpool2d": ((2, 3, 9, 9), np.float32,
                                         lambda x: _unpooled_by_plane(x), 3),
    "run_node": ((1, 8, 9, 9), np.float32, lambda x: oc.run_node(NODE, [x], opset=22), 1),
}


def _unpooled(x):
    """MaxPool's values and Indices, then MaxUnpool of them (three outputs)."""
    y, indices = oc.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], return_indices=True)
    return y, indices, oc.max_unpool(y, indices, kernel_shape=[2, 2], strides=[2, 2])


def _unpooled_by_plane(x):
    """F.max_pool2d's values and per-plane indices, then F.max_unpool2d of them back to x's
    size (three outputs)."""
    y, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    return y, indices, F.max_unpool2d(y, indices, 3, 2, 1, output_size=x.shape[2:])


_INDICES = weakref.WeakKeyDictionary()   # the library's cupy (a stand-in) -> {shape: indices}


def _plane_indices(x, plane):
    """Random per-plane indices in [0, plane) of x's shape (repeats among them) on the
    library's cupy, made at the first call of each shape, as a caller keeps its indices."""
    cp = execution.cupy_module()
    made = _INDICES.setdefault(cp, {})
    if x.shape not in made:
        rng = np.random.default_rng(len(x.shape))
        made[x.shape] = cp.asarray(rng.integers(0, plane, x.shape))
    return made[x.shape]


def _warped(theta):
    """AffineGrid of theta, then GridSample of the grid's own two channels (a strided view)
    at it: two outputs."""
    grid = oc.affine_grid(theta, [theta.shape[0], 2, 5, 7])
    return grid, oc.grid_sample(grid.transpose(0, 3, 1, 2), grid, mode="linear")


REFUSED = ("to device", "to host", "synchronize", "wait", "compile")


@pytest.fixture
def fake(request):
    return fake_cupy.install(request)


def _input(fake, rng, shape, dtype):
    return fake.asarray((rng.standard_normal(shape) * 4).astype(dtype))


def _outputs(result):
    if isinstance(result, list):
        return result
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("case", CASES)
def test_a_repeated_call_allocates_its_outputs_and_launches(fake, rng, case):
    shape, dtype, call, count = CASES[case]
    call(_input(fake, rng, shape, dtype))
    x = _input(fake, rng, shape, dtype)
    since = len(fake.operations)
    outputs = _outputs(call(x))
    done = fake.operations[since:]
    assert [o.kind for o in done if o.kind in REFUSED] == [], done
    allocated = [o for o in done if o.kind == "allocate"]
    assert len(allocated) == count == len(outputs), done
    assert all(o.what == "from the pool" for o in allocated), done   # the first call's blocks
    assert sum(o.nbytes for o in allocated) == sum(-(-max(y.nbytes, 1) // 512) * 512
                                                   for y in outputs)


@pytest.mark.parametrize("case", CASES)
def test_a_repeated_call_launches_what_the_first_did(fake, rng, case):
    shape, dtype, call, _ = CASES[case]
    call(_input(fake, rng, shape, dtype))
    first = [(k.expression, k.grid, k.block) for k in fake.launches]
    x = _input(fake, rng, shape, dtype)
    since = len(fake.launches)
    call(x)
    assert [(k.expression, k.grid, k.block) for k in fake.launches[since:]] == first


@pytest.mark.parametrize("case", ["average_pool-fast", "max_pool-indices", "hardmax-scan",
                                  "resize-linear-fast", "F.avg_pool2d-divisor_override"])
def test_with_out_a_repeated_call_allocates_nothing(fake, rng, case):
    shape, dtype, call, count = CASES[case]
    x = _input(fake, rng, shape, dtype)
    expected = _outputs(call(x))
    if count == 1 and not case.startswith("F."):
        out = fake.empty(expected[0].shape, expected[0].dtype)
        run = {"average_pool-fast": lambda: oc.average_pool(x, out=out, **P3),
               "hardmax-scan": lambda: oc.hardmax(x, axis=1, out=out),
               "resize-linear-fast": lambda: oc.resize(x, scales=[1, 1, 2, 2], mode="linear",
                                                       out=out)}[case]
        run()
        since = len(fake.operations)
        assert run() is out
        assert fake.operations[since:] == []
    else:
        since = len(fake.operations)
        call(x)
        assert [o.kind for o in fake.operations[since:] if o.kind != "elementwise"] == \
            ["allocate"] * count


# id -> (X's shape, dtype, function, attributes): the gradients by onnx_cupy.vjp, which
# computes the forward output a gradient reads (MaxPool's Indices, LpPool's Y) at each call
P4 = {"kernel_shape": [4, 4], "strides": [4, 4], "pads": [1, 1, 1, 1]}
GRADIENTS = {
    "average_pool": ((2, 3, 32, 30), np.float32, oc.average_pool, P4),
    "max_pool-f16": ((2, 3, 32, 30), np.float16, oc.max_pool, P4),
    "max_pool-generic-4d": ((1, 2, 8, 8, 8, 8), np.float32, oc.max_pool,
                            {"kernel_shape": [2, 2, 2, 2], "strides": [2, 2, 2, 2]}),
    "lp_pool-p3": ((2, 3, 32, 30), np.float32, oc.lp_pool, {**P4, "p": 3}),
    "global_average_pool": ((2, 3, 15, 17), np.float32, oc.global_average_pool, {}),
    "global_max_pool": ((2, 3, 15, 17), np.float64, oc.global_max_pool, {}),
    "global_lp_pool": ((2, 3, 15, 17), np.float32, oc.global_lp_pool, {"p": 3}),
    "F.adaptive_max_pool2d": ((2, 3, 32, 30), np.float32, F.adaptive_max_pool2d,
                              {"output_size": (4, 3)}),
    "F.avg_pool2d": ((2, 3, 32, 30), np.float32, F.avg_pool2d,
                     {"kernel_size": 4, "stride": 4, "divisor_override": 5}),
}


@pytest.mark.parametrize("case", GRADIENTS)
def test_a_repeated_gradient_allocates_its_gradient_and_o_output_scratch(fake, rng, case):
    """A repeated vjp allocates dX and, where the gradient reads the forward's output, that
    output (at most 8 bytes per element of Y for each of Y and Indices): O(output) scratch,
    nothing the size of X beyond dX; no upload, wait or compile."""
    shape, dtype, function, attrs = GRADIENTS[case]
    y = function((rng.standard_normal(shape)).astype(dtype), **attrs)
    y_size = _outputs(y)[0].size

    def call():
        x, dy = _input(fake, rng, shape, dtype), _input(fake, rng, _outputs(y)[0].shape, dtype)
        since = len(fake.operations)
        (dx,) = oc.vjp(function, x, cotangent=dy, **attrs)
        return dx, fake.operations[since:]

    call()
    dx, done = call()
    assert [o.kind for o in done if o.kind in REFUSED] == [], done
    allocated = [o.nbytes for o in done if o.kind == "allocate"]
    gradient = -(-dx.nbytes // 512) * 512
    assert gradient in allocated and dx.shape == shape, done
    scratch, bound = sum(allocated) - gradient, 2 * -(-y_size * 8 // 512) * 512
    assert scratch <= bound < dx.nbytes, (scratch, done)


def test_a_repeated_gradient_given_its_saved_output_allocates_only_dx(fake, rng):
    """Given the forward's Indices (as autograd saves them), a repeated MaxPool gradient
    allocates dX alone."""
    from onnx_cupy.pool import api
    x = _input(fake, rng, (2, 3, 9, 9), np.float32)
    _, indices = oc.max_pool(x, return_indices=True, **P3)
    dy = _input(fake, rng, indices.shape, np.float32)
    api.gradient("MaxPool", x, dy, (22, P3), saved=indices)
    since = len(fake.operations)
    dx = api.gradient("MaxPool", x, dy, (22, P3), saved=indices)
    done = fake.operations[since:]
    assert [(o.kind, o.nbytes) for o in done if o.kind == "allocate"] == [
        ("allocate", -(-dx.nbytes // 512) * 512)], done


def test_a_sequence_of_calls_is_captured_and_replayed(fake, rng):
    """Every case's repeated call inside one stream capture: nothing is refused, the graph holds
    their launches, and each replay launches them again."""
    inputs = {case: _input(fake, rng, shape, dtype)
              for case, (shape, dtype, _, _) in CASES.items()}
    stream = fake.cuda.Stream(non_blocking=True)
    with stream:
        warm = [call(inputs[case]) for case, (_, _, call, _) in CASES.items()]
        del warm   # first calls (compile, plan, upload); their outputs' blocks stay pooled
        stream.synchronize()
        since = len(fake.launches)
        stream.begin_capture()
        kept = [call(inputs[case]) for case, (_, _, call, _) in CASES.items()]
        graph = stream.end_capture()
    captured = fake.launches[since:]
    assert captured and all(k.captured and k.stream == stream.ptr for k in captured)
    assert graph.captured == captured and len(kept) == len(CASES)
    graph.launch()
    graph.launch()
    replayed = fake.launches[since + len(captured):]
    assert [k.expression for k in replayed] == [k.expression for k in captured] * 2
    assert not any(k.captured for k in replayed)


@pytest.mark.parametrize("case", ["resize-linear-fast", "resize-generic",
                                  "F.avg_pool2d-divisor_override"])
def test_a_first_call_is_refused_under_capture(fake, rng, case):
    """A first call uploads its tables and waits for them: CUDA refuses that in a capture,
    so the calls to capture are made once before (the documented warm-up)."""
    shape, dtype, call, _ = CASES[case]
    x = _input(fake, rng, shape, dtype)
    stream = fake.cuda.Stream()
    with stream:
        stream.begin_capture()
        with pytest.raises(fake_cupy.CaptureError, match="during stream capture"):
            call(x)
        stream.end_capture()


def test_the_standin_refuses_what_a_capture_refuses(fake):
    """The checks the tests above rely on fire: a copy from the host, a synchronization, a wait
    on an event recorded outside the capture, an allocation the pool cannot serve."""
    stream = fake.cuda.Stream()
    event = fake.cuda.Event()
    event.record()
    with stream:
        stream.begin_capture()
        for refused in (lambda: fake.asarray(np.ones(3)), stream.synchronize,
                        lambda: stream.wait_event(event), lambda: fake.empty(1000, np.float32)):
            with pytest.raises(fake_cupy.CaptureError):
                refused()
        stream.end_capture()


def test_threads_on_one_stream_get_their_own_workspace(fake):
    """Threads share the null stream, where their launches interleave: each thread carves its
    scratch data from a workspace of its own; one thread's calls reuse its own."""
    import threading

    scratch = workspaces.Scratch(fake, ((256,), np.dtype(np.float32)))   # a call's scratch
    taken = {}
    both = threading.Barrier(2)   # both threads alive at once (an ended thread's id is reused)

    def take(n: int) -> None:
        (taken[n],) = scratch()
        both.wait(timeout=10)

    threads = [threading.Thread(target=take, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert taken[0].data.ptr != taken[1].data.ptr
    (mine,) = scratch()
    assert scratch()[0] is mine


@pytest.mark.parametrize("op", ["grid_sample", "upsample"])
def test_a_misaligned_input_on_another_device_is_copied_there(fake, rng, op):
    """An input not aligned to its element size is copied before the kernels read it: on its own
    device, whichever device is current, with `out` checked against the input itself."""
    with fake.cuda.Device(1):
        raw = fake.asarray(np.zeros(2 * 3 * 5 * 7 * 4 + 1, np.uint8))
        x = raw[1:].view(np.float32).reshape(2, 3, 5, 7)
        grid = fake.asarray(rng.uniform(-1, 1, (2, 4, 6, 2)).astype(np.float32))
    run = {"grid_sample": lambda out=None: oc.grid_sample(x, grid, out=out),
           "upsample": lambda out=None: oc.upsample(x, [1.0, 1.0, 2.0, 2.0], mode="linear",
                                                    out=out)}[op]
    y = run()
    assert y.device.id == 1
    with fake.cuda.Device(1):
        assert run(fake.empty(y.shape, np.float32)).device.id == 1
    overlapping = raw[:y.nbytes].view(np.float32).reshape(y.shape) if y.nbytes <= raw.nbytes - 1 \
        else None
    if overlapping is not None:
        with pytest.raises(ValueError, match="out overlaps the input X"):
            run(overlapping)


@pytest.mark.parametrize("case", ["resize-linear-fast", "resize-generic",
                                  "F.avg_pool2d-divisor_override"])
def test_a_graph_keeps_the_tables_of_calls_dropped_after_its_capture(fake, rng, case):
    """A captured graph reads the tables its calls uploaded: dropping the prepared calls from
    their caches afterwards (more configurations than MAX_CALLS, or calls.clear) leaves the
    tables to the graph, so that a replay after the memory pool handed their blocks out again
    still gives the call's result; release_workspaces() lets them go."""

    shape, dtype, call, _ = CASES[case]
    x = _input(fake, rng, shape, dtype)
    stream = fake.cuda.Stream(non_blocking=True)
    with stream:
        want = call(x).get()   # the first call: plan, compile, upload (its blocks pooled)
        stream.begin_capture()
        y = call(x)
        graph = stream.end_capture()
    y[...] = 0
    calls.clear()   # the prepared call and its tables dropped
    for blocks in fake._free.values():   # the pool's free blocks handed out and overwritten
        for memory, _ in blocks:
            memory[...] = 0xFF
    graph.launch()
    np.testing.assert_array_equal(y.get(), want)
    assert oc.release_workspaces() >= 0 and workspaces._graph_kept == []
