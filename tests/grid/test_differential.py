"""GridSample against the loop oracle, onnxruntime and onnx.reference on 756 seeded
configurations: every mode x padding mode x align_corners x dtype (float16, bfloat16, float32,
float64, int8, uint8, int32) x 2-D and 3-D, three times each, with random opsets, shapes, grid
dtypes and positions (outside [-1, 1], on a 1/8 lattice of exact ties, NaN, infinite and far
away); tests/cases/grid.py draws them (the kernel checker runs them too),
helpers/grid_differential.py runs and judges them. onnx-cupy equals the oracle on
every one; where the runtimes agree, it equals them; every disagreement of the runtimes is a
listed case (grid_differential.KNOWN) and onnx-cupy gives the side the case names; the emulated
path equals the NumPy path bit for bit on every tenth configuration.

Each configuration is a test of its own (`-k 0042-` reruns one). The coverage tests count how many
configurations reached each check, and that docs/_generated/differential.md holds those counts
(helpers/differential_report.py writes it). All but the configurations that also run the
emulated kernels are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import grid_differential as diff
from helpers.differential import parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

INDICES = range(diff.COUNT)
# configurations reaching each check with this seed (onnxruntime 1.32, onnx 1.23), less a margin
AT_LEAST = {"oracle": diff.COUNT, "ort_ran": 200, "ref_ran": 550, "values": 110,
            "disagreement_listed": 35, "follows_listed_side": 15, "only_ort": 15, "only_ref": 40,
            "emulated_equals_numpy": diff.COUNT // diff.EMULATED_EVERY}


@pytest.mark.parametrize("index", parameters(
    INDICES, diff.name, lambda i: i % diff.EMULATED_EVERY == 0))
def test_configuration(index):
    """onnx-cupy runs it and every check it reaches passes (values where the runtimes agree may
    differ only inside a listed case: the runtimes can agree there by coincidence)."""
    diff.evaluate(index).assert_passed()


@pytest.fixture(scope="module")
def counts():
    return totals(diff.evaluate(i) for i in INDICES)


def test_every_combination_is_drawn():
    """Each mode, padding mode, align_corners, dtype and rank combination, three times."""
    seen = {}
    for i in INDICES:
        c = diff.configuration(i)
        key = (c.mode, c.padding, c.align_corners, c.dtype.name, c.rank)
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == len(diff.BASES) and set(seen.values()) == {3}


@pytest.mark.slow
@pytest.mark.parametrize("check", list(AT_LEAST))
def test_check_reached(counts, check):
    assert counts[check] >= AT_LEAST[check], dict(counts)
    assert not counts[f"failed:{check}"], dict(counts)


@pytest.mark.slow
def test_every_configuration_runs_and_every_case_occurs(counts):
    """onnx-cupy runs every configuration (the runtimes reject some: onnxruntime's dtypes and
    ranks, onnx.reference's opset-16 names), and each listed case applies to some. Prints what
    each check reached (with -s)."""
    print(f"\nGridSample: {dict(sorted(counts.items()))}")
    assert counts["ours_ran"] == diff.COUNT and not counts["failed:ours_ran"]
    applied = {k.removeprefix("applies:") for k in counts if k.startswith("applies:")}
    assert applied == {k.name for k in diff.KNOWN}, applied


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now."""
    differential_report.assert_current("GridSample")
