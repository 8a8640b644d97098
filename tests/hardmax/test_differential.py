"""Hardmax on 1,200 seeded random configurations (opsets 1-13 and beyond, ranks 1-5, every axis
incl. negative ones, every float dtype) against an oracle, onnxruntime, onnx.reference and ONNX
shape inference (helpers/hardmax_differential.py draws, runs and judges them).

Each configuration is a test of its own (`-k 0042-` reruns one): it must pass every check it
reaches. The coverage tests count, over the same cached evaluations, how many configurations
reached each check and each class of disagreement between the runtimes, and that
docs/_generated/differential.md holds those counts (helpers/differential_report.py
writes it). All but the configurations that also run the emulated kernels (every 4th)
are marked slow, and so are the coverage tests."""
from __future__ import annotations

import pytest
from helpers import differential_report
from helpers import hardmax_differential as diff
from helpers.differential import parameters, totals

CONFIGS = [diff.configuration(i) for i in range(diff.CONFIGS)]


@pytest.mark.parametrize("config", parameters(
    CONFIGS, lambda c: c.name, lambda c: c.index % diff.EMULATED_EVERY == 0))
def test_configuration(config):
    """Oracle (and emulated = oracle where it runs), the runtimes' shape where they agree on it,
    shape inference's where it agrees with them, their values where they agree, onnxruntime's
    below opset 13, every disagreement of the runtimes classified."""
    record = diff.evaluate(config.index)
    assert not record.failures, record.report()


@pytest.mark.slow
def test_checks_reached():
    """How many configurations reached each check (printed with -s), none failing."""
    n = totals(diff.evaluate(i) for i in range(diff.CONFIGS))
    print(dict(n))
    assert not [k for k in n if k.startswith("failed:")], dict(n)
    assert n["oracle"] == diff.CONFIGS and n["emulated"] == diff.CONFIGS // diff.EMULATED_EVERY
    assert n["shape = runtimes"] >= 300 and n["shape = inference"] >= 300
    assert n["runtimes agree"] >= 250 and n["values = runtimes"] == n["runtimes agree"]
    assert n["differ: coerced 2-D rows below 13 (reference applies v13)"] >= 50


@pytest.mark.slow
def test_documented_figures_are_current():
    """docs/_generated/differential.md holds what these configurations reach now (written by
    helpers/differential_report.py; regenerate it after a change to them)."""
    differential_report.assert_current("Hardmax")
