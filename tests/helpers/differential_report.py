"""The differential tests' figures as Markdown, one small table per family: how many
configurations reached each check and event (`failed: <check>` / `tolerated: <check>` where any
did not pass), and how often each listed case where the runtimes differ came up.

Write docs/_generated/differential.md (the documentation includes it) from the repository root:

    PYTHONPATH=src:tests python -m helpers.differential_report [path]

Each family's coverage test asserts that the committed file's table is what its cached
evaluations give now (`assert_current`). The counts depend on onnxruntime's and onnx's versions
(and numpy's random streams): the file's header names them, and a run under other versions
skips the comparison with a message that says to regenerate, rather than failing.
"""
from __future__ import annotations

import difflib
import sys
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from helpers import (
    grid_differential,
    hardmax_differential,
    nearest_differential,
    pool_differential,
    resize_differential,
    unpool_differential,
    upsample_differential,
)
from helpers.differential import Record, totals

PATH = Path(__file__).resolve().parents[2] / "docs" / "_generated" / "differential.md"
COMMAND = "PYTHONPATH=src:tests python -m helpers.differential_report"
VERSIONED = ("onnx", "onnxruntime", "numpy")
FOLLOWS = {"ort": "onnxruntime's", "ref": "onnx.reference's", "exact": "neither: the exact formula"}


class Family(NamedTuple):
    """A family's configurations (`records` evaluates them, cached), the test module running
    them, what its checks and events mean (in the order the table lists them), the prefix of
    its listed-case counts and the cases in their listed order, each with the cells of
    `columns` (no list: the cases counted, by name)."""

    test: str
    records: Callable[[], list[Record]]
    checks: dict[str, str]
    prefix: str
    cases: dict[str, tuple[str, ...]] | None = None
    columns: tuple[str, ...] = ()


POOL_CHECKS = {
    "oracle": "onnx-cupy (NumPy path) equals the loop oracle",
    "rejected": "an output length is negative: onnx-cupy rejects it (ValueError)",
    "emulated": "the emulated kernels equal the NumPy path",
    "runtimes_differ": "onnxruntime and onnx.reference disagree: a listed case applies",
    "runtimes_shape": "both runtimes give one shape: ours equals it",
    "runtimes_shape_coincide": "both give one shape, each put off by a listed case: not compared",
    "inference": "shape inference's static shape equals the runtimes': ours equals it",
    "inference_differs": "shape inference's static shape differs from ours (not compared)",
    "judged_by_ort": "no listed case puts onnxruntime off: its result is compared",
    "agree_ort": "... and ours equals it (values, or both reject)",
    "judged_by_ref": "no listed case puts onnx.reference off: its result is compared",
    "agree_ref": "... and ours equals it (values, or both reject)",
    "all_reject": "onnx-cupy and both runtimes reject it",
}
HARDMAX_CHECKS = {
    "oracle": "onnx-cupy (NumPy path) equals the oracle",
    "emulated": "the emulated kernels equal the oracle",
    "ort ran": "onnxruntime runs it (it has no float64 or bfloat16 kernel)",
    "reference ran": "onnx.reference runs it",
    "shape = runtimes": "both runtimes ran and give one shape: ours equals it",
    "shape = inference": "shape inference's static shape equals theirs: ours equals it",
    "runtimes agree": "the runtimes' values agree",
    "values = runtimes": "... and ours equal theirs",
    "values = onnxruntime below 13": "the runtimes disagree below opset 13: ours equal "
                                     "onnxruntime's",
}
RESIZE_CHECKS = {
    "ours_ran": "onnx-cupy runs it",
    "emulated_equals_numpy": "the emulated kernels equal the NumPy path",
    "ort_ran": "onnxruntime runs it",
    "ref_ran": "onnx.reference runs it",
    "inferred_static": "shape inference infers a static shape",
    "shape": "both runtimes give one shape: ours equals it",
    "shape_inference": "shape inference's static shape equals theirs: ours equals it",
    "inference_differs_from_runtimes": "shape inference's static shape differs from theirs",
    "values": "the runtimes' values agree: ours equal them (a miss inside a listed case is "
              "tolerated)",
    "disagreement_listed": "the runtimes disagree: a listed case applies",
    "follows_listed_side": "... and ours equals the side the cases name",
    "exact_side": "the cases that apply name neither side (exact formula): not compared",
    "mixed_sides": "the cases that apply name different sides (or another than the one "
                   "runtime that runs it): not compared",
    "only_ort": "only onnxruntime runs it: ours equals its result (unless a case names the "
                "other side)",
    "only_ref": "only onnx.reference runs it: ours equals its result (unless a case names the "
                "other side)",
}

UNPOOL_CHECKS = {
    "oracle": "onnx-cupy (NumPy path) equals the loop oracle bit for bit, or rejects what it "
              "must (ValueError)",
    "ours ran": "... computing a result",
    "inputs kept": "X and I are unchanged by the call",
    "emulated": "the emulated kernels equal the NumPy path bit for bit",
    "ort ran": "onnxruntime runs it",
    "reference ran": "onnx.reference runs it",
    "shape = runtimes": "both runtimes give one shape: ours equals it",
    "shape = inference": "shape inference's static shape equals theirs: ours equals it",
    "values = runtimes": "the runtimes agree (values, or both reject): ours does",
    "follows listed side": "the runtimes disagree: a listed case applies, ours is the side it "
                           "names",
    "oracle side": "a listed case names neither runtime: the oracle check judges it",
}
UPSAMPLE_CHECKS = {
    "oracle": "onnx-cupy (NumPy path) equals the oracle",
    "rejected": "a scale below 1: onnx-cupy rejects it (ValueError)",
    "emulated": "the emulated kernels equal the NumPy path",
    "ort ran": "onnxruntime runs it",
    "reference ran": "onnx.reference runs it (nearest with whole scales, opsets 9 and 10)",
    "shape = runtimes": "both runtimes run it: ours has their shape",
    "values = runtimes": "... and their values",
    "shape = inference": "shape inference's static shape: ours equals it",
    "only_ort": "only onnxruntime runs it, no listed case applies: ours equals its result",
    "only_ref": "only onnx.reference runs it: ours equals its result",
    "oracle side": "only onnxruntime runs it and a listed case puts it off: the oracle judges",
}


NEAREST_CHECKS = {
    "oracle": "onnx-cupy picks what the oracle picks (onnxruntime's float32 formulas and tie "
              "band; half_pixel_symmetric exactly)",
    "emulated_equals_numpy": "the emulated kernels equal the NumPy path",
    "equals_onnxruntime": "no listed case applies: ours equals onnxruntime's output",
    "listed_ort_differs": "a listed case applies and onnxruntime's output differs from ours",
    "axis_equals_onnxruntime": "... and ours picks what onnxruntime picks on every axis no "
                               "listed case puts off (where readable)",
    "reference_sides_with_exact": "half_pixel_symmetric where onnxruntime differs: onnx.reference "
                                  "picks what exact arithmetic (and ours) picks",
    "runtimes_round_off_exact": "... except where both runtimes pick alike, off exact arithmetic",
}


GRID_CHECKS = {
    "ours_ran": "onnx-cupy runs it",
    "oracle": "onnx-cupy (NumPy path) equals the loop oracle",
    "emulated_equals_numpy": "the emulated kernels equal the NumPy path, bit for bit",
    "ort_ran": "onnxruntime runs it",
    "ref_ran": "onnx.reference runs it",
    "shape": "a runtime runs it: ours has its shape (counted per runtime)",
    "values": "the runtimes' values agree: ours equal them",
    "disagreement_listed": "the runtimes disagree: a listed case applies",
    "follows_listed_side": "... and ours equals the side the cases name",
    "only_ort": "only onnxruntime runs it: ours equals its result (unless a case names the "
                "other side)",
    "only_ref": "only onnx.reference runs it: ours equals its result (unless a case names the "
                "other side)",
    "exact_side": "a case that applies names neither runtime: the oracle decides",
    "other_side": "a case names the runtime that does not run it: not compared",
}


def _pool(op: str) -> Family:
    return Family("tests/pool/test_differential.py",
                  lambda: [pool_differential.evaluate(op, i)
                           for i in range(pool_differential.CONFIGS)],
                  POOL_CHECKS, "case:", {c.name: (c.what,) for c in pool_differential.CASES},
                  ("what",))


def _listed(test: str, module: Any, checks: dict[str, str]) -> Family:
    """A family whose helper module counts `listed:<name>` for each of its listed cases
    (KNOWN, of helpers.differential.Listed) that applies to a configuration."""
    return Family(test, lambda: [module.evaluate(i) for i in range(module.CONFIGS)], checks,
                  "listed:", {k.name: (FOLLOWS[k.follows], k.why) for k in module.KNOWN},
                  ("onnx-cupy gives", "what"))


FAMILIES = {
    "AveragePool": _pool("AveragePool"),
    "LpPool": _pool("LpPool"),
    "Hardmax": Family("tests/hardmax/test_differential.py",
                      lambda: [hardmax_differential.evaluate(i)
                               for i in range(hardmax_differential.CONFIGS)],
                      HARDMAX_CHECKS, "differ: "),
    "Resize": Family("tests/resize/test_differential.py",
                     lambda: [resize_differential.evaluate(i) for i in range(
                         resize_differential.COUNT + len(resize_differential.EXTRAS))],
                     RESIZE_CHECKS, "known:", {k.name: (FOLLOWS[k.follows], k.why)
                                for k in resize_differential.KNOWN},
                     ("onnx-cupy gives", "what")),
    "Resize nearest": Family("tests/resize/test_nearest_differential.py",
                             lambda: [nearest_differential.evaluate(i)
                                      for i in range(nearest_differential.COUNT)],
                             NEAREST_CHECKS, "listed:", {k.name: (k.checked, k.why)
                                                         for k in nearest_differential.LISTED},
                             ("onnx-cupy checked against", "what")),
    "MaxUnpool": _listed("tests/unpool/test_differential.py", unpool_differential,
                         UNPOOL_CHECKS),
    "Upsample": _listed("tests/resize/test_upsample_differential.py", upsample_differential,
                        UPSAMPLE_CHECKS),
    "GridSample": Family("tests/grid/test_differential.py",
                         lambda: [grid_differential.evaluate(i)
                                  for i in range(grid_differential.COUNT)],
                         GRID_CHECKS, "applies:", {k.name: (FOLLOWS[k.follows], k.why)
                                                 for k in grid_differential.KNOWN},
                         ("onnx-cupy gives", "what")),
}
CASE_NOTE = {
    "case:": "configurations each listed case applies to (the runtimes it puts off are not "
             "compared there); `runtimes_differ` counts those where the runtimes disagree",
    "differ: ": "configurations where the runtimes disagree, by class",
    "known:": "configurations where the runtimes disagree, by listed case (several can apply "
              "to one)",
    "listed:": "configurations each listed case applies to (several can apply to one; the side "
               "it puts off is not compared there)",
    "applies:": "configurations each listed case applies to (several can apply to one), "
                "whether the runtimes disagree there or one of them does not run it",
}


def versions() -> str:
    """The header line naming the versions the figures depend on."""
    return "- versions: " + ", ".join(f"{name} {metadata.version(name)}" for name in VERSIONED)


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(name: str, records: Iterable[Record] | None = None) -> str:
    """Family `name`'s section: its configurations, then checks and events with how many
    configurations reached each, then the listed cases with their counts."""
    family = FAMILIES[name]
    records = family.records() if records is None else list(records)
    counts = totals(records)
    order = ("failed:", "tolerated:")
    listed = list(family.checks)
    checks = sorted((k for k in counts if not k.startswith(family.prefix)),
                    key=lambda k: (k.startswith(order), listed.index(k) if k in listed
                                   else len(listed), k))
    lines = [f"**{name}**: {len(records):,} configurations ({family.test})", "",
             _row("check or event", "configurations", "what"), _row("---", "---", "---")]
    lines += [_row(f"`{k.replace(':', ': ', 1)}`" if k.startswith(order) else f"`{k}`",
                   f"{counts[k]:,}", family.checks.get(k, "")) for k in checks]
    cases = family.cases or {k.removeprefix(family.prefix): () for k in sorted(counts)
                             if k.startswith(family.prefix)}
    columns = ("case", "configurations", *family.columns)
    lines += ["", CASE_NOTE[family.prefix] + ":", "", _row(*columns), _row(*["---"] * len(columns))]
    lines += [_row(f"`{c}`" if family.cases else c, f"{counts[family.prefix + c]:,}", *cells)
              for c, cells in cases.items()]
    return "\n".join(lines) + "\n"


def document() -> str:
    """The whole file: header, then every family's section."""
    header = [f"<!-- written by `{COMMAND}`: do not edit -->",
              "- figures of the differential tests; they depend on the versions below",
              versions()]
    return "\n".join(header + [""] + [table(name) for name in FAMILIES])


def _section(text: str, name: str) -> list[str]:
    """Family `name`'s lines in a written file: from its bold title to the next one."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f"**{name}**")), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("**")),
               len(lines))
    while end > start and not lines[end - 1]:
        end -= 1
    return lines[start:end]


def assert_current(name: str, path: Path = PATH) -> None:
    """Family `name`'s table in the committed file is what this run computes; under other
    versions than the file's, the test skips with a message that says to regenerate (a
    dependency's release changes the figures, not onnx-cupy's behaviour)."""
    where = path.relative_to(PATH.parents[2]) if path.is_relative_to(PATH.parents[2]) else path
    regenerate = f"regenerate it: {COMMAND} (then commit {where})"
    assert path.exists(), f"{where} is missing: {regenerate}"
    text = path.read_text(encoding="utf-8")
    written = next((line for line in text.splitlines() if line.startswith("- versions:")), "")
    if written != versions():   # a dependency released: not a failure of onnx-cupy
        pytest.skip(f"{where} was written under other versions "
                    f"({written.removeprefix('- versions: ')}) than this run "
                    f"({versions().removeprefix('- versions: ')}) and its figures depend on "
                    f"them: {regenerate}")
    fresh = table(name).splitlines()
    committed = _section(text, name)
    assert committed == fresh, f"{where}: the {name} figures are stale: {regenerate}\n" + "\n".join(
        difflib.unified_diff(committed, fresh, "committed", "this run", lineterm=""))


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else PATH
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the runtimes' and NumPy's, as the tests filter them
        text = document()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
