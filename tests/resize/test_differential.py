"""Resize against onnxruntime, onnx.reference and onnx shape inference on 2,400 seeded random
configurations (tests/resize_differential.py draws and runs them). Where the two runtimes agree,
onnx-cupy gives their shape and values; where shape inference infers a static shape the runtimes
agree with, onnx-cupy gives it; every disagreement of the runtimes is a listed case
(resize_differential.KNOWN) and onnx-cupy gives the side the case names; the emulated path equals
the NumPy path on every tenth configuration."""
from __future__ import annotations

import pytest
from helpers import resize_differential as diff

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

COUNT = 2400
SEED = 20261123
EMULATED_EVERY = 10
# configurations reaching each check with this seed (onnxruntime 1.32, onnx 1.23), less a margin
# for other versions
AT_LEAST = {"shape": 1500, "shape_inference": 1500, "values": 1150, "disagreement_listed": 330,
            "follows_listed_side": 290, "only_ort": 220, "only_ref": 230,
            "emulated_equals_numpy": COUNT // EMULATED_EVERY}


@pytest.fixture(scope="module")
def tally() -> diff.Tally:
    return diff.tally(diff.run_all(COUNT, SEED, EMULATED_EVERY))


def _describe(outcomes: list[diff.Outcome]) -> str:
    return "\n".join(f"{o.config}" for o in outcomes[:5])


@pytest.mark.parametrize("check", ["shape", "shape_inference", "disagreement_listed",
                                   "follows_listed_side", "only_ort", "only_ref",
                                   "emulated_equals_numpy"])
def test_check_passes_everywhere(tally, check):
    """Shapes (runtimes agreeing, shape inference agreeing with them), listed disagreements and
    the side followed, single-runtime results, emulated = NumPy: no exception."""
    assert tally.counts.get(check, 0) >= AT_LEAST[check], tally.counts
    failed = tally.failures.get(check, [])
    assert not failed, _describe(failed)


def test_values_where_the_runtimes_agree(tally):
    """At least 99.9 %: the rest are runtimes agreeing by coincidence inside a listed case
    (onnxruntime copying X where onnx.reference happens to sample the same element)."""
    reached = tally.counts["values"]
    failed = tally.failures.get("values", [])
    assert reached >= AT_LEAST["values"]
    assert len(failed) <= reached // 1000, _describe(failed)
    assert all(diff.known(o.config) for o in failed), _describe(failed)


def test_every_listed_case_occurs(tally):
    """Each documented disagreement shows up among the configurations."""
    seen = {name.removeprefix("known:") for name in tally.counts if name.startswith("known:")}
    assert seen == {k.name for k in diff.KNOWN}, seen


def test_every_configuration_runs(tally):
    """onnx-cupy runs every configuration (the runtimes reject some: onnxruntime's rank and
    dtype limits, onnx.reference's Resize-10)."""
    assert tally.counts["ours_ran"] == tally.counts["configurations"] == COUNT + len(diff.EXTRAS)
    assert tally.counts["ort_ran"] >= COUNT * 0.7 and tally.counts["ref_ran"] >= COUNT * 0.7
