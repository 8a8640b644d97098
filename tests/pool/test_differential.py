"""AveragePool and LpPool on 1,000 seeded random configurations per operator, every opset and
dtype, against the loop oracle, onnxruntime, onnx.reference and ONNX shape inference
(helpers/pool_differential.py draws, runs and judges them).

Each configuration is a test of its own (`-k AveragePool-0042` reruns one): it must pass every
check it reaches. The coverage tests count, over the same cached evaluations, how many
configurations reached each check, so that the suite cannot pass by skipping, and that
docs/_generated/differential.md holds those counts (helpers/differential_report.py
writes it). All but the configurations that also run the emulated kernels (every 10th)
are marked slow, and so are the coverage tests.
"""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import pool_differential as diff
from helpers.differential import parameters, totals

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

CONFIGS = [diff.configuration(op, i) for op in diff.OPS for i in range(diff.CONFIGS)]
# cases that only one operator can meet
ONLY = {"ref_lp_pool_padding": "LpPool", "ref_average_pool_1_counts_pads": "AveragePool",
        "ort_empty_window": "AveragePool"}


@pytest.mark.parametrize("config", parameters(
    CONFIGS, lambda c: c.name, lambda c: c.index % diff.EMULATED_EVERY == 0))
def test_configuration(config):
    """Oracle (or the rejection of a negative length), emulated = numpy where it runs, the
    runtimes' shape where they agree, shape inference's where they agree with it, each runtime's
    values unless a listed case puts it off, every disagreement of the runtimes listed."""
    record = diff.evaluate(config.op, config.index)
    assert not record.failures, record.report()


@pytest.fixture(scope="module", params=diff.OPS)
def counts(request):
    return request.param, totals(diff.evaluate(request.param, i) for i in range(diff.CONFIGS))


@pytest.mark.slow
def test_every_listed_case_occurs(counts):
    op, n = counts
    for case in diff.CASES:
        if ONLY.get(case.name, op) == op:
            assert n[f"case:{case.name}"] >= 5, (op, case.name)


@pytest.mark.slow
def test_checks_reached(counts):
    """How many configurations reached each check (printed with -s), none failing."""
    op, n = counts
    print(f"\n{op}: {dict(sorted(n.items()))}")
    assert not [k for k in n if k.startswith("failed:")], dict(n)
    assert n["oracle"] + n["rejected"] == diff.CONFIGS
    assert n["emulated"] >= diff.CONFIGS // 12
    assert n["runtimes_shape"] >= diff.CONFIGS * 0.45
    assert n["judged_by_ort"] >= diff.CONFIGS * 0.4 and n["judged_by_ref"] >= diff.CONFIGS * 0.3
    assert n["inference"] >= diff.CONFIGS * 0.4


@pytest.mark.slow
@pytest.mark.parametrize("op", diff.OPS)
def test_documented_figures_are_current(op):
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current(op)
