"""Where the cupy backend cannot run, the library says why, in one line, from one place
(execution.cupy_unusable): the default backend is then numpy, and forcing the cupy backend is a
RuntimeError with that reason. The answer is asked once per process (once per substitute cupy),
so that the default backend stays a look-up."""
from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
from helpers import fake_install
from helpers.standin import StandIn

import onnx_cupy as oc
from onnx_cupy.core import cupy_path, execution


def test_forcing_cupy_without_a_gpu_names_the_drivers_error(no_gpu):
    with pytest.raises(RuntimeError) as info, oc.backend("cupy"):
        pass
    assert str(info.value) == f"backend 'cupy' cannot run here: no usable GPU: {no_gpu}"
    assert execution.forced() is None


def test_forcing_cupy_without_cupy_says_what_to_install():
    with execution.cupy_substitute(None), pytest.raises(
            RuntimeError, match=r"^backend 'cupy' cannot run here: CuPy is not installed: pip "
                                r"install .*\.\[cuda12\]"), oc.backend("cupy"):
        pass


@pytest.mark.parametrize("devices, nvrtc, headers, version, expected", [
    (1, True, fake_install.HEADERS, "14.2.0", "cupy"),
    (1, True, fake_install.HEADERS, "15.0.0rc1", "cupy"),
    (None, True, fake_install.HEADERS, "14.2.0", "numpy"),   # the driver's error
    (0, True, fake_install.HEADERS, "14.2.0", "numpy"),      # no device
    (1, False, fake_install.HEADERS, "14.2.0", "numpy"),     # no NVRTC: the first call would fail
    (1, True, None, "14.2.0", "numpy"),                      # no CUDA headers
    (1, True, fake_install.HEADERS, "14.1.1", "numpy"),      # below the floor
])
def test_default_backend_is_cupy_only_where_it_can_run(devices, nvrtc, headers, version,
                                                        expected, monkeypatch):
    fake_install.headers(monkeypatch, headers)
    with execution.cupy_substitute(fake_install.cupy(version, devices, nvrtc)):
        assert execution.default_backend() == expected
        assert execution.gpu_available() == (expected == "cupy")
        assert (execution.cupy_unusable() is None) == (expected == "cupy")


@pytest.mark.parametrize("version, problems", [
    ("14.2.0", [["no", "usable"], ["NVRTC", "not"], ["CUDA", "headers"]]),
    # below the floor, how CuPy finds NVRTC and the headers is moot: upgrading it is the answer
    ("14.0.1", [["CuPy", "14.0.1"], ["no", "usable"]]),
])
def test_every_problem_in_one_line(version, problems, monkeypatch):
    fake_install.headers(monkeypatch, None)
    with execution.cupy_substitute(fake_install.cupy(version, None, nvrtc=False)):
        reason = execution.cupy_unusable()
    assert "\n" not in reason
    assert [p.split(" ")[0:2] for p in reason.split("; ")] == problems


def test_no_device_is_said():
    with execution.cupy_substitute(fake_install.cupy(devices=0)):
        assert execution.cupy_unusable().startswith(
            "no GPU is visible (CUDA counts 0 devices)")


def test_a_substitute_is_asked_once(monkeypatch):
    fake_install.headers(monkeypatch)
    fake = fake_install.cupy(devices=1)
    with execution.cupy_substitute(fake):
        assert [execution.default_backend() for _ in range(3)] == ["cupy"] * 3
        with oc.backend("cupy"):
            pass
    assert fake.device_counts == 1


def test_the_stand_in_is_checked_for_its_devices_only():
    """The stand-in builds the kernels with the host compiler: no CuPy version, NVRTC or
    headers to check; a substitute that is not a module, and whose runtime raises, says so."""
    with StandIn().installed():
        assert execution.cupy_unusable() is None and execution.default_backend() == "cupy"

    def no_driver():
        raise fake_install.CUDARuntimeError(fake_install.DRIVER_TEXT)

    broken = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=no_driver)))   # no weak reference either
    with execution.cupy_substitute(broken):
        assert execution.cupy_unusable() == f"no usable GPU: {fake_install.DRIVER_TEXT}"
    assert cupy_path.checks(broken)[0].what == "GPU" and len(cupy_path.checks(broken)) == 1


def test_the_installed_cupy_is_asked_once():
    """In a fresh process whose `import cupy` finds a CuPy without a usable GPU: the default
    backend, asked again and again, asked the runtime once."""
    code = f"""
import json, sys
sys.path[:0] = {sys.path!r}
from helpers import fake_install
sys.modules["cupy"] = fake = fake_install.cupy()
import onnx_cupy as oc
from onnx_cupy.core import execution
answers = [oc.default_backend() for _ in range(5)] + [execution.gpu_available()]
print(json.dumps([answers, fake.device_counts, execution.cupy_unusable()]))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    answers, counts, reason = json.loads(res.stdout)
    assert answers == ["numpy"] * 5 + [False] and counts == 1
    assert reason.startswith(f"no usable GPU: {fake_install.DRIVER_TEXT}")
