"""The benchmark's host section (onnx_cupy.tools.host) on a few rows: it installs a non-executing
emulated device as the library's cupy for the run only, and every row gets its figures."""
from __future__ import annotations

import numpy as np

from onnx_cupy.core import emulated_device, execution
from onnx_cupy.tools import host


def test_host_rows_run_on_a_non_executing_emulated_device(monkeypatch):
    seen = []
    rows = tuple(c for c in host.CALLS if c.name in ("AveragePool 3x3 s2 p1", "Hardmax axis=-1"))

    def spy(oc, F, x):   # the device a row's call runs on
        seen.append(execution.cupy_module())
        return oc.hardmax(x)
    monkeypatch.setattr(host, "CALLS", (*rows, host.HostCall("spy", (2, 8), spy, judged=False)))
    before = execution.cupy_module()
    found = host.measure(samples=2, calls=3)
    device = seen[0]
    assert type(device) is emulated_device.EmulatedDevice and not device.executing
    assert all(d is device for d in seen)
    assert execution.cupy_module() is before
    names = [r["call"] for r in found["rows"]]
    assert {"AveragePool 3x3 s2 p1", "Hardmax axis=-1", "spy",
            "emulated device: cupy.empty((1, 64, 28, 28))",
            "emulated device: a launch of (x, y, struct)"} <= set(names)
    assert all(0 < r["us_range"][0] <= r["us"] <= r["us_range"][1] for r in found["rows"])
    assert found["targets"]["slowest_us"] == max(r["us"] for r in found["rows"] if r["judged"])
    assert np.isfinite(found["targets"]["median_us"])
