"""MaxUnpool on 900 seeded random configurations (opsets 9-22, 1-4 spatial axes, every dtype,
pads beyond the kernel and negative ones, output_shape larger or shorter than the unpooled
shape, windowed or scattered indices with repeats, NaN, infinities, -0.0) against a loop oracle,
onnxruntime, onnx.reference and ONNX shape inference (tests/cases/unpool.py draws them,
the kernel checker runs them too; helpers/unpool_differential.py runs and judges them).

Each configuration is a test of its own (`-k 0042-` reruns one): it must pass every check it
reaches. The coverage tests count, over the same cached evaluations, how many configurations
reached each check and each listed case, and that docs/_generated/differential.md holds those
counts (helpers/differential_report.py writes it). All but the configurations that also run the
emulated kernels (every 4th) are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import unpool_differential as diff
from helpers.differential import listed_seen, parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

CONFIGS = [diff.configuration(i) for i in range(diff.CONFIGS)]
# configurations reaching each check with this seed (onnxruntime 1.32, onnx 1.23), less a margin
AT_LEAST = {"ours ran": 700, "shape = runtimes": 350, "shape = inference": 300,
            "values = runtimes": 480, "follows listed side": 270,
            "emulated": diff.CONFIGS // diff.EMULATED_EVERY}


@pytest.mark.parametrize("config", parameters(
    CONFIGS, lambda c: c.name, lambda c: c.index % diff.EMULATED_EVERY == 0))
def test_configuration(config):
    """The oracle bit for bit (emulated = NumPy where it runs), inputs kept, the runtimes' shape
    and values where they agree, shape inference's where it agrees with them, a listed case
    wherever they disagree and the side it names."""
    record = diff.evaluate(config.index)
    assert not record.failures, record.report()


@pytest.fixture(scope="module")
def counts():
    return totals(diff.evaluate(i) for i in range(diff.CONFIGS))


@pytest.mark.slow
def test_checks_reached(counts):
    """How many configurations reached each check (printed with -s), none failing."""
    print(f"\nMaxUnpool: {dict(sorted(counts.items()))}")
    assert not [k for k in counts if k.startswith("failed:")], dict(counts)
    assert counts["oracle"] == counts["inputs kept"] == diff.CONFIGS
    assert all(counts[k] >= n for k, n in AT_LEAST.items()), dict(counts)


@pytest.mark.slow
def test_every_listed_case_occurs(counts):
    """Each documented disagreement shows up among the configurations."""
    seen = listed_seen(counts)
    assert seen == {k.name for k in diff.KNOWN}, seen


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("MaxUnpool")
