"""Upsample on 900 seeded random configurations (opsets 7, 9 and 10, nearest and linear, ranks
1-5, whole and fractional scales, a few below 1, float, integer, bool and complex dtypes)
against an oracle, onnxruntime, onnx.reference and ONNX shape inference
(helpers/upsample_differential.py draws, runs and judges them).

Each configuration is a test of its own (`-k 0042-` reruns one): it must pass every check it
reaches. The coverage tests count, over the same cached evaluations, how many configurations
reached each check and each listed case, and that docs/_generated/differential.md holds those
counts (helpers/differential_report.py writes it). All but the configurations that also run the
emulated kernels (every 4th) are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import upsample_differential as diff
from helpers.differential import parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

CONFIGS = [diff.configuration(i) for i in range(diff.CONFIGS)]
# configurations reaching each check with this seed (onnxruntime 1.32, onnx 1.23), less a margin
AT_LEAST = {"oracle": 800, "shape = inference": 800, "only_ort": 300, "only_ref": 15,
            "values = runtimes": 20, "rejected": 25,
            "emulated": diff.CONFIGS // diff.EMULATED_EVERY - 40}


@pytest.mark.parametrize("config", parameters(
    CONFIGS, lambda c: c.name, lambda c: c.index % diff.EMULATED_EVERY == 0))
def test_configuration(config):
    """The oracle (emulated = NumPy where it runs), shape inference's shape, the runtimes'
    results where they run unless a listed case puts them off."""
    record = diff.evaluate(config.index)
    assert not record.failures, record.report()


@pytest.fixture(scope="module")
def counts():
    return totals(diff.evaluate(i) for i in range(diff.CONFIGS))


@pytest.mark.slow
def test_checks_reached(counts):
    """How many configurations reached each check (printed with -s), none failing."""
    print(f"\nUpsample: {dict(sorted(counts.items()))}")
    assert not [k for k in counts if k.startswith("failed:")], dict(counts)
    assert counts["oracle"] + counts["rejected"] == diff.CONFIGS
    assert all(counts[k] >= n for k, n in AT_LEAST.items()), dict(counts)


@pytest.mark.slow
def test_every_listed_case_occurs(counts):
    seen = {k.removeprefix("listed:") for k in counts if k.startswith("listed:")}
    assert seen == {k.name for k in diff.KNOWN}, seen


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("Upsample")
