"""Upsample against an oracle, onnxruntime, onnx.reference and ONNX shape inference on 900
seeded random configurations: opsets 7, 9 and 10, nearest and linear, ranks 1-5, whole and
fractional scales and a few below 1, float, integer, bool and complex dtypes (drawn in
tests/cases/upsample.py, which the kernel checker runs too, run and judged in
helpers/upsample_differential.py, one test id each: `-k 0042-` reruns one). The slow coverage
tests count what the cached evaluations reached, that every listed case occurs, and that
docs/_generated/differential.md holds the counts; every 4th configuration, which also runs the
emulated kernels, is in the quick subset."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import upsample_differential as diff
from helpers.differential import listed_seen, parameters, totals

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


@pytest.mark.slow
def test_coverage():
    """Over the cached evaluations (the counts printed with -s): no check failed, each reached
    at least AT_LEAST configurations, every configuration either ran or was rejected, and every
    listed case applied somewhere."""
    reached = totals(diff.evaluate(i) for i in range(diff.CONFIGS))
    print(f"\nUpsample: {dict(sorted(reached.items()))}")
    assert not [k for k in reached if k.startswith("failed:")], dict(reached)
    assert reached["oracle"] + reached["rejected"] == diff.CONFIGS
    assert all(reached[k] >= n for k, n in AT_LEAST.items()), dict(reached)
    assert listed_seen(reached) == {k.name for k in diff.KNOWN}, dict(reached)


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("Upsample")
