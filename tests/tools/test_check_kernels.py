"""`onnx-cupy check-kernels`: the quick subset of every family's configurations runs clean under
the checker (its last line, its exit status, its table), every operator's by --op; the cases are
the differential tests' configurations (tests/cases/, which the package does not install); a
kernel source edited with an error is checked as edited and fails the command; the documented
figures are what the full command gives now."""
from __future__ import annotations

import difflib
import re
import shutil
import sys
from pathlib import Path

import cases
import pytest
from cases import global_pool, hardmax, maxpool, pool, resize
from helpers.util import forget_libraries

from onnx_cupy.core import loader
from onnx_cupy.tools import check_kernels, cli

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "_generated" / "check_kernels.md"
COMMAND = "onnx-cupy check-kernels --markdown docs/_generated/check_kernels.md"
LAST = re.compile(r"checked: (\d+) launches, (\d+) accesses, (\d+) errors")
adaptive, grid, nearest, unpool, upsample = (cases.adaptive, cases.grid, cases.nearest,
                                             cases.unpool, cases.upsample)


def command(capsys, *argv: str) -> tuple[int, list[str]]:
    status = cli.main(["check-kernels", *argv])
    return status, capsys.readouterr().out.splitlines()


def table(lines: list[str]) -> dict[str, list[str]]:
    """The printed table's rows: operator (or 'all') -> its other cells."""
    start = next(i for i, line in enumerate(lines) if line.startswith("operator "))
    return {line.split()[0]: line.split()[1:] for line in lines[start + 1:-1]}


# the operators of every family, by the names --op takes (the adaptive pools: the pool family's;
# the gradients of the pools and of MaxUnpool: {op}Grad)
OPERATORS = ["AdaptiveAveragePool", "AdaptiveAveragePoolGrad", "AdaptiveMaxPool",
             "AdaptiveMaxPoolGrad", "AffineGrid", "AveragePool", "AveragePoolGrad",
             "GlobalAveragePool", "GlobalAveragePoolGrad", "GlobalLpPool", "GlobalLpPoolGrad",
             "GlobalMaxPool", "GlobalMaxPoolGrad", "GridSample", "Hardmax", "LpPool",
             "LpPoolGrad", "MaxPool", "MaxPoolGrad", "MaxRoiPool", "MaxUnpool", "MaxUnpoolGrad",
             "Resize", "ResizeGrad", "RoiAlign", "Upsample", "UpsampleGrad"]


def test_quick_subset_runs_clean(capsys):
    """The suite's run of the checker: every operator's representative configurations, each
    launch on the host's grid and narrowed, every access and barrier checked, no error."""
    status, lines = command(capsys, "--quick")
    launches, accesses, errors = map(int, LAST.fullmatch(lines[-1]).groups())
    assert status == 0 and errors == 0, "\n".join(lines)
    assert launches >= 500 and accesses >= 10**6
    rows = table(lines)
    assert list(rows) == [*OPERATORS, "all"] == [*cases.operators(), "all"]
    assert all(int(rows[op][2].replace(",", "")) > 0 for op in OPERATORS), rows   # launches
    narrowed = int(rows["all"][3].replace(",", ""))
    assert 0.4 * launches <= narrowed <= 0.6 * launches


def test_quick_subset_of_each_family():
    """Every family's quick subset takes configurations of every operator, of every mode, rank
    or call, and of the layouts of its fast kernels (the new families' float32 ones: few kernel
    instantiations to build)."""
    quick = cases.cases(quick=True)
    for op in OPERATORS:
        drawn = [c for c in quick if c.op == op and not c.name.startswith("layout-")]
        assert len(drawn) >= 3, op
    kinds = {"GridSample": {(grid.configuration(i).mode, grid.configuration(i).rank)
                            for i in range(grid.COUNT) if grid.quick(i)},
             "AffineGrid": {(len(c.size), c.align_corners) for c in map(
                 grid.affine_configuration, range(grid.AFFINE_COUNT))
                 if grid.affine_quick(c.index)},
             "adaptive": {(c.call, len(c.shape)) for c in map(adaptive.configuration, range(
                 adaptive.COUNT)) if adaptive.quick(c)}}
    assert kinds["GridSample"] == {(mode, rank) for mode in grid.MODES for rank in (2, 3)}
    assert kinds["AffineGrid"] == {(4, 0), (4, 1), (5, 0), (5, 1)}   # 2-D and 3-D
    assert kinds["adaptive"] == {(call, rank + 2) for calls in adaptive.CALLS.values()
                                 for call in calls for rank in (1, 2, 3)}
    assert {c.name.split("-")[1] for c in quick if c.name.startswith("layout-")} >= {
        "grid", "affine", "unpool"}
    assert any(c.name.startswith("nearest-") for c in quick if c.op == "Resize")


def test_one_operator(capsys):
    status, lines = command(capsys, "--quick", "--op", "Hardmax")
    assert status == 0 and list(table(lines)) == ["Hardmax", "all"], lines
    assert LAST.fullmatch(lines[-1]).group(3) == "0"


@pytest.mark.parametrize("op", OPERATORS)
def test_op_takes_every_operator(op):
    """--op accepts each operator's name and selects its cases, and only those."""
    args = cli.parser().parse_args(["check-kernels", "--op", op])
    selected = cases.cases(args.op, quick=True)
    assert args.op == [op] and selected and {c.op for c in selected} == {op}


def test_new_families_run_alone(capsys):
    """GridSample, AffineGrid, MaxUnpool, Upsample and the adaptive pools by --op, each clean."""
    ops = ["GridSample", "AffineGrid", "MaxUnpool", "Upsample", "AdaptiveAveragePool",
           "AdaptiveMaxPool"]
    status, lines = command(capsys, "--quick", *(a for op in ops for a in ("--op", op)))
    assert status == 0 and list(table(lines)) == [*sorted(ops), "all"], lines
    assert LAST.fullmatch(lines[-1]).group(3) == "0"


def test_an_unknown_operator_is_refused(capsys):
    with pytest.raises(SystemExit):
        cli.main(["check-kernels", "--op", "AdaptiveAvgPool"])
    assert "invalid choice: 'AdaptiveAvgPool'" in capsys.readouterr().err


def test_the_cases_are_the_differential_configurations():
    """One generator for the differential tests and the checker: the same ids, every one."""
    names = {op: [c.name for c in cases.cases([op]) if not c.name.startswith("layout-")]
             for op in cases.operators()}
    assert names["AveragePool"] == [pool.configuration("AveragePool", i).name
                                    for i in range(pool.CONFIGS)]
    assert len(names["LpPool"]) == pool.CONFIGS == 1000
    assert names["MaxPool"] == [maxpool.name(i) for i in range(maxpool.CONFIGS)]
    assert names["Hardmax"] == [hardmax.configuration(i).name for i in range(hardmax.CONFIGS)]
    assert names["Resize"] == [
        *(resize.name(i) for i in range(resize.COUNT + len(resize.EXTRAS))),
        *(f"nearest-{nearest.name(i)}" for i in range(nearest.COUNT))]
    assert len(names["Resize"]) == resize.COUNT + len(resize.EXTRAS) + nearest.COUNT == 4803
    assert sum(len(names[op]) for op in global_pool.OPS) == len(global_pool.configurations())
    assert [c.name for c in cases.cases(["Resize"], quick=True)][:2] == [resize.name(0),
                                                                          resize.name(80)]
    assert names["GridSample"] == [grid.name(i) for i in range(grid.COUNT)]
    assert len(names["GridSample"]) == 756
    assert names["MaxUnpool"] == [
        *(unpool.configuration(i).name for i in range(unpool.CONFIGS)),
        *(unpool.plane_configuration(i).name for i in range(unpool.PLANE_CONFIGS))]
    assert names["Upsample"] == [upsample.configuration(i).name for i in range(upsample.CONFIGS)]
    assert len(names["MaxUnpool"]) - unpool.PLANE_CONFIGS == len(names["Upsample"]) == 900
    assert len(names["AffineGrid"]) == grid.AFFINE_COUNT
    assert len(names["AdaptiveAveragePool"]) + len(names["AdaptiveMaxPool"]) == (
        adaptive.COUNT + len(adaptive.EXTRAS))
    # the gradients: every EVERY[family]-th forward configuration (MaxPool's float ones), and
    # every adaptive, global and valid plane-indexed MaxUnpool one
    every = cases.gradients.EVERY
    for op in ("AveragePool", "LpPool"):
        assert names[f"{op}Grad"] == names[op][::every["pool"]]
    assert names["MaxPoolGrad"] == [maxpool.name(i) for i in range(0, maxpool.CONFIGS,
                                                                     every["maxpool"])
                                    if maxpool.configs()[i].dtype.kind == "f"]
    for op in (*global_pool.OPS, "AdaptiveAveragePool", "AdaptiveMaxPool"):
        assert names[f"{op}Grad"] == names[op], op
    assert names["MaxUnpoolGrad"] == [
        *(unpool.configuration(i).name for i in range(0, unpool.CONFIGS, every["unpool"])),
        *(p.name for p in map(unpool.plane_configuration, range(unpool.PLANE_CONFIGS))
          if not p.invalid)]


def test_the_differential_helpers_draw_from_the_package():
    """The differential tests' helpers take their configurations from tests/cases/:
    the same functions, not copies."""
    from helpers import (
        grid_differential,
        nearest_differential,
        unpool_differential,
        upsample_differential,
    )

    assert grid_differential.configuration is grid.configuration
    assert grid_differential.inputs is grid.inputs and grid_differential.name is grid.name
    assert nearest_differential.configuration is nearest.configuration
    assert nearest_differential.name is nearest.name
    assert unpool_differential.configuration is unpool.configuration
    assert unpool_differential.sample is unpool.sample
    assert upsample_differential.configuration is upsample.configuration
    assert upsample_differential.sample is upsample.sample


OFF_BY_ONE = (r"memcheck: out of bounds: pool_global<.*>, block \(\d+, 0, 0\), thread \(\d+, "
              r"0, 0\): load of \d bytes at 0x[0-9a-f]+ at common\.cuh:\d+ \(inlined into "
              r"pool\.cu:\d+\): outside every array of the launch: offset \d+ of x")
NO_BARRIER = (r"\(grid-stride axes narrowed\): KernelCheckError: racecheck: race: "
              r"pool_global<.*__shared__ partial")
EDITS = {
    # the last element of every plane's walk, then one past it: memcheck in the last plane
    "read past the plane": (
        "for (int j = 0; j < POOL_SEGMENT && i < (I)g.length; ++j, i += (I)OC_BLOCK)",
        "for (int j = 0; j < POOL_SEGMENT && i <= (I)g.length; ++j, i += (I)OC_BLOCK)",
        OFF_BY_ONE),
    # the next plane's partials written while thread 0 reads this plane's: only where one
    # block serves several planes (the narrowed runs)
    "no barrier before the next plane": (
        "    __syncthreads();  // partial is reused by the next plane\n", "\n", NO_BARRIER),
}


@pytest.fixture
def edited_kernels(monkeypatch, tmp_path):
    """kernels/ copied to a temporary folder the loader reads from; yields a function that
    edits pool.cu there (the package's kernel sources as a user would edit them)."""
    folder = tmp_path / "kernels"
    shutil.copytree(loader.KERNEL_DIR, folder)
    monkeypatch.setattr(loader, "KERNEL_DIR", folder)
    libraries = forget_libraries(monkeypatch)
    loader.source.cache_clear()

    def edit(old: str, new: str) -> None:
        text = (folder / "pool.cu").read_text()
        assert text.count(old) == 1
        (folder / "pool.cu").write_text(text.replace(old, new))
        loader.source.cache_clear()   # as a new process would read and build it
        libraries.clear()

    yield edit
    loader.source.cache_clear()


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_an_edited_kernel_is_checked_as_edited(edited_kernels, capsys, edit):
    old, new, message = EDITS[edit]
    status, lines = command(capsys, "--quick", "--op", "GlobalMaxPool")
    assert status == 0 and lines[-1].endswith(" 0 errors")
    edited_kernels(old, new)
    status, lines = command(capsys, "--quick", "--op", "GlobalMaxPool")
    assert status == 1, lines
    errors = int(LAST.fullmatch(lines[-1]).group(3))
    reported = [line for line in lines if "Error: " in line]
    assert errors == len(reported) > 0
    assert all(re.search(message, line) for line in reported), "\n".join(reported)
    if edit == "no barrier before the next plane":   # the host's grid: a block per plane
        assert all("narrowed" in line for line in reported)


def _figures(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("- ")]


@pytest.mark.slow   # every configuration, compiled and checked
def test_documented_figures_are_current():
    """docs/_generated/check_kernels.md (included in the testing page) is what the full command
    gives now, under the versions its header names (under others it skips: a compiler's or
    NumPy's release is no failure of onnx-cupy)."""
    assert FIGURES.exists(), f"run {COMMAND}"
    committed = FIGURES.read_text(encoding="utf-8")
    written = next((line for line in committed.splitlines() if line.startswith("- versions:")),
                   "")
    if written != check_kernels.versions():   # a compiler or NumPy release: regenerate
        pytest.skip(f"{FIGURES.name} was written under other versions ({written}) than this "
                    f"run's ({check_kernels.versions()}), and the counts of checked accesses "
                    f"depend on the compiler: regenerate it with {COMMAND}")
    result = check_kernels.run()
    assert result.total().errors == 0, result.errors
    fresh = check_kernels.markdown(result, COMMAND)
    assert _figures(committed) == _figures(fresh), "\n".join(difflib.unified_diff(
        _figures(committed), _figures(fresh), "committed", "this run", lineterm=""))


def test_outside_a_clone_the_command_says_where_the_configurations_are(monkeypatch, tmp_path,
                                                                       capsys):
    """The package does not install the configurations: run elsewhere than a clone's root
    (where tests/cases/ is), the command says so and fails, with no traceback."""
    monkeypatch.delitem(sys.modules, "cases")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not p.endswith("tests")])
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check-kernels", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "tests/cases/ in a clone" in err and "Traceback" not in err, err
    assert check_kernels.catalogue(ROOT) is not None   # found from the clone's root
