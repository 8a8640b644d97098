"""Resize nearest against the installed onnxruntime on 2,400 seeded random configurations
(tests/cases/nearest.py draws them, the kernel checker runs them too;
helpers/nearest_differential.py runs and judges them): every nearest mode and coordinate
mode, scales and sizes, up- and down-sampling, 1-3 resized axes. onnx-cupy picks the element the
oracle picks (onnxruntime's float32 formulas and tie band; half_pixel_symmetric exactly), and the
element onnxruntime picks, output by output, except inside a listed case (a row of
docs/semantics.md where onnx-cupy keeps another length or coordinate); the emulated path equals
the NumPy path on every tenth configuration.

Each configuration is a test of its own (`-k 0042-` reruns one); all but the configurations that
also run the emulated kernels are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import nearest_differential as diff
from helpers.differential import parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

INDICES = range(diff.COUNT)


@pytest.mark.parametrize("index", parameters(
    INDICES, diff.name, lambda i: i % diff.EMULATED_EVERY == 0))
def test_configuration(index):
    record = diff.evaluate(index)
    assert not record.failures, record.report()


@pytest.fixture(scope="module")
def counts():
    return totals(diff.evaluate(i) for i in INDICES)


# configurations reaching each check with this seed (onnxruntime 1.32), less a margin for other
# versions
AT_LEAST = {"oracle": diff.COUNT, "equals_onnxruntime": 1850, "axis_equals_onnxruntime": 150,
            "emulated_equals_numpy": diff.COUNT // diff.EMULATED_EVERY,
            "reference_sides_with_exact": 10}


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(AT_LEAST))
def test_check_reached(counts, check):
    """onnx-cupy equals the oracle everywhere, and onnxruntime on most configurations as a
    whole (the rest: on every axis no listed case puts onnxruntime off, where readable)."""
    assert counts[check] >= AT_LEAST[check], dict(counts)
    assert not counts[f"failed:{check}"], dict(counts)


@pytest.mark.slow
def test_every_listed_case_occurs(counts):
    """Each listed case shows up; onnxruntime runs every configuration; where both runtimes
    land off exact half_pixel_symmetric arithmetic the same way, it is rare."""
    seen = {name.removeprefix("listed:") for name in counts if name.startswith("listed:")}
    assert seen == {k.name for k in diff.LISTED}, seen
    assert not counts["ort_rejects"], dict(counts)
    assert counts["runtimes_round_off_exact"] <= counts["listed:half_pixel_symmetric_exact"] // 50


@pytest.mark.slow
def test_draw_covers_every_mode():
    """Every opset, coordinate mode and nearest mode, scales and sizes, growing and shrinking
    axes, and axes longer than 100 are drawn."""
    configs = [diff.configuration(i) for i in INDICES]
    seen = {(c.opset, c.ctm, c.rule, "sizes" in c.inputs) for c in configs}
    for opset, ctms in diff.COORDINATE_MODES.items():
        rules = ("",) if opset == 10 else diff.NEAREST_MODES
        given = (False,) if opset == 10 else (False, True)
        assert {(opset, ctm, rule, g) for ctm in ctms for rule in rules for g in given} <= seen
    resized = [a for c in configs for a in diff.axes_of(c) if a.m != a.n]
    assert any(a.m > a.n for a in resized) and any(a.m < a.n for a in resized)
    assert sum(a.n > 100 for a in resized) >= 100


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("Resize nearest")
