"""Resize against onnxruntime, onnx.reference and onnx shape inference on 2,400 seeded random
configurations and a few fixed ones (helpers/resize_differential.py draws, runs and judges them).
Where the two runtimes agree, onnx-cupy gives their shape and values; where shape inference
infers a static shape the runtimes agree with, onnx-cupy gives it; every disagreement of the
runtimes is a listed case (resize_differential.KNOWN) and onnx-cupy gives the side the case
names; the emulated path equals the NumPy path on every tenth configuration.

Each configuration is a test of its own (`-k 0042-` reruns one). The coverage tests count, over
the same cached evaluations, how many configurations reached each check, and that
docs/_generated/differential.md holds those counts (helpers/differential_report.py
writes it). All but the configurations that also run the emulated kernels (every 10th)
are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import resize_differential as diff
from helpers.differential import parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

INDICES = range(diff.COUNT + len(diff.EXTRAS))
# configurations reaching each check with this seed (onnxruntime 1.32, onnx 1.23), less a margin
# for other versions
AT_LEAST = {"shape": 1500, "shape_inference": 1500, "values": 1150, "disagreement_listed": 330,
            "follows_listed_side": 290, "only_ort": 220, "only_ref": 230,
            "emulated_equals_numpy": diff.COUNT // diff.EMULATED_EVERY}


@pytest.mark.parametrize("index", parameters(
    INDICES, diff.name, lambda i: i % diff.EMULATED_EVERY == 0))
def test_configuration(index):
    """onnx-cupy runs it; every check it reaches passes (values where the runtimes agree may
    differ only inside a listed case: the runtimes can agree there by coincidence)."""
    record = diff.evaluate(index)
    assert not record.failures, record.report()
    assert not record.tolerated or diff.known(diff.configuration(index)), record.report()


@pytest.fixture(scope="module")
def counts():
    return totals(diff.evaluate(i) for i in INDICES)


@pytest.mark.slow
@pytest.mark.parametrize("check", ["shape", "shape_inference", "disagreement_listed",
                                   "follows_listed_side", "only_ort", "only_ref",
                                   "emulated_equals_numpy"])
def test_check_reached(counts, check):
    """Shapes (runtimes agreeing, shape inference agreeing with them), listed disagreements and
    the side followed, single-runtime results, emulated = NumPy: reached often enough, never
    failed."""
    assert counts[check] >= AT_LEAST[check], dict(counts)
    assert not counts[f"failed:{check}"], dict(counts)


@pytest.mark.slow
def test_values_where_the_runtimes_agree(counts):
    """At least 99.9 %: the rest are runtimes agreeing by coincidence inside a listed case
    (onnxruntime copying X where onnx.reference happens to sample the same element)."""
    assert counts["values"] >= AT_LEAST["values"]
    assert counts["tolerated:values"] <= counts["values"] // 1000, dict(counts)
    assert not counts["failed:values"], dict(counts)


@pytest.mark.slow
def test_every_listed_case_occurs(counts):
    """Each documented disagreement shows up among the configurations."""
    seen = {name.removeprefix("known:") for name in counts if name.startswith("known:")}
    assert seen == {k.name for k in diff.KNOWN}, seen


@pytest.mark.slow
def test_every_configuration_runs(counts):
    """onnx-cupy runs every configuration (the runtimes reject some: onnxruntime's rank and
    dtype limits, onnx.reference's Resize-10). Prints what each check reached (with -s)."""
    print(f"\nResize: {dict(sorted(counts.items()))}")
    assert counts["ours_ran"] == len(INDICES) and not counts["failed:ours_ran"]
    assert counts["ort_ran"] >= diff.COUNT * 0.7 and counts["ref_ran"] >= diff.COUNT * 0.7


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("Resize")
