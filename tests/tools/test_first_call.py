"""`onnx-cupy warmup`: --dry-run times every instantiation a selection's first calls may compile
with NVRTC (and, with --before, each family whole), as Markdown tables; without it, it warms the
chosen path (a fake cupy here) and reports the seconds."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import fake_cupy
from helpers.util import forget_libraries

from onnx_cupy.core import records, warmup
from onnx_cupy.tools import cli, first_call

ROOT = Path(__file__).resolve().parents[2]


def _tables(text: str) -> list[list[list[str]]]:
    """The body rows of each Markdown table in `text`, in order."""
    tables: list[list[list[str]]] = []
    rows: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            tables.append([[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]])
            rows = []
    return tables


def _warmed(family, name, ops, dtypes, seconds):
    """A made-up warmed instantiation: template `name` of `family`, no arguments."""
    kernel = records.Instantiation(family, name, (), ops, dtypes, ())
    return warmup.Warmed(kernel, ops, dtypes, seconds)


def test_rows_group_by_operator_and_dtype():
    k = [_warmed("pool", "a", ("AveragePool", "LpPool"), ("float32",), 0.2),
         _warmed("pool", "b", ("LpPool",), ("float32", "float16"), 0.4),
         _warmed("pool", "c", ("LpPool",), ("float32",), 0.3)]
    got = {(r.op, r.dtype): r for r in first_call.rows(k)}
    assert set(got) == {("AveragePool", "float32"), ("LpPool", "float32"), ("LpPool", "float16")}
    assert got["LpPool", "float32"] == first_call.Row("LpPool", "float32", 3, 0.3, 0.4,
                                                      pytest.approx(0.9))
    assert got["AveragePool", "float32"].count == 1
    assert got["LpPool", "float16"].total == 0.4


def test_dry_run_times_each_instantiation_and_the_whole_family(tmp_path, capsys):
    out = tmp_path / "docs" / "first_call.md"
    assert cli.main(["warmup", "--dry-run", "--op", "Hardmax", "--dtype", "float16",
                     "--before", "--repeat", "2", "--list", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    text = out.read_text()
    assert text in printed
    assert re.search(r"NVRTC \d+\.\d+", text) and "sm_90" in text
    assert "`onnx-cupy warmup --dry-run --op Hardmax --dtype float16 --before --repeat 2 " \
           "--list --out " in text
    operators, dtypes, listed = _tables(text)
    expected = warmup.instantiations("Hardmax", "float16")
    assert [row[1].strip("`") for row in listed] == [k.expression for k in expected]
    seconds = [float(row[2]) for row in listed]
    assert all(s > 0 for s in seconds)
    (op_row,) = operators
    assert op_row[:2] == ["Hardmax", str(len(expected))]
    median, slowest = map(float, op_row[2].split(" / "))
    assert slowest == pytest.approx(max(seconds), abs=1e-3) and median <= slowest
    assert op_row[3] == first_call.verdict(slowest, first_call.NVRTC_TARGET)
    whole = float(op_row[5].split()[0])
    assert re.fullmatch(r"[\d.]+ \(slowest [\d.]+\)", op_row[5])   # fastest of 2 compiles
    assert whole > slowest   # one module of all 40 instantiations outlasts any one of them
    (dtype_row,) = dtypes
    assert dtype_row[:3] == ["Hardmax", "float16", str(len(expected))]


def test_warmup_command_compiles_on_the_current_device(request, capsys):
    fake = fake_cupy.install(request)
    assert cli.main(["warmup", "--backend", "cupy", "--op", "LpPool", "--dtype", "float32",
                     "--dtype", "bfloat16", "--jobs", "2"]) == 0
    expected = warmup.instantiations("LpPool", ["float32", "bfloat16"])
    assert sorted(fake.loaded(0)) == sorted(fake.compiled()) == sorted(k.expression
                                                                        for k in expected)
    text = capsys.readouterr().out
    assert f"{len(expected)} in " in text and "backend cupy" in text
    assert {row[1] for row in _tables(text)[1]} == {"float32", "bfloat16"}


def test_warmup_command_without_a_gpu_names_the_ways_out(no_gpu, capsys):
    assert cli.main(["warmup", "--op", "Resize"]) == 2
    err = capsys.readouterr().err
    assert "--backend emulated" in err and "--dry-run" in err and no_gpu in err


def test_warmup_command_rejects_a_dtype_the_operator_does_not_take(capsys):
    assert cli.main(["warmup", "--dry-run", "--op", "Hardmax", "--dtype", "int8"]) == 2
    assert "warmup: no kernel of Hardmax takes dtype int8" in capsys.readouterr().err


def test_warmup_command_rejects_an_unknown_operator(capsys):
    with pytest.raises(SystemExit):
        cli.main(["warmup", "--op", "Conv"])
    assert "invalid choice: 'Conv'" in capsys.readouterr().err


@pytest.mark.slow   # NVRTC or g++ builds of whole families
def test_emulated_warmup_command_times_the_builds_and_the_whole_family(monkeypatch, tmp_path,
                                                                       capsys):
    monkeypatch.setenv("ONNX_CUPY_CACHE", str(tmp_path))
    forget_libraries(monkeypatch)   # what this process has loaded already
    assert cli.main(["warmup", "--backend", "emulated", "--op", "Hardmax", "--dtype", "float32",
                     "--before"]) == 0
    text = capsys.readouterr().out
    assert "precompiling the shim header" in text and "g++" in text
    (op_row,), _, fresh = _tables(text)
    assert op_row[:2] == ["Hardmax", "10"]
    assert [row[0] for row in fresh] == [label for label, _, _ in first_call.CALLS]
    assert all(row[3] in ("<=3 met", "<=3 missed") and float(row[2]) > 0 for row in fresh)
    slowest = float(op_row[2].split(" / ")[1])
    assert float(op_row[4]) > slowest   # all 40 in one library outlast any one of them
    assert len(list(tmp_path.glob("emulator/hardmax-*.so"))) == 10


def test_before_without_a_whole_family_measure_is_refused(request, capsys):
    fake = fake_cupy.install(request)
    assert cli.main(["warmup", "--backend", "cupy", "--before", "--op", "Hardmax"]) == 2
    assert "warmup: --before needs --dry-run or --backend emulated" in capsys.readouterr().err
    assert not fake.modules


@pytest.mark.parametrize("seconds, target, expected", [(0.249, 0.5, "<=0.5 met"),
                                                       (0.5, 0.5, "<=0.5 met"),
                                                       (3.2, 3.0, "<=3 missed")])
def test_verdict_judges_seconds_against_a_ceiling(seconds, target, expected):
    assert first_call.verdict(seconds, target) == expected


def test_nvrtc_operator_table_judges_the_slowest_instantiation():
    k = [_warmed("pool", "a", ("AveragePool",), ("float32",), 0.2),
         _warmed("pool", "b", ("AveragePool",), ("float32",), 0.7),
         _warmed("hardmax", "c", ("Hardmax",), ("float32",), 0.1)]
    (rows,) = _tables(first_call.operator_table(k, target=first_call.NVRTC_TARGET))
    assert rows[0][:4] == ["AveragePool", "2", "0.450 / 0.700", "<=0.5 missed"]
    assert rows[1][:4] == ["Hardmax", "1", "0.100 / 0.100", "<=0.5 met"]
    assert "target" not in first_call.operator_table(k)


def test_fresh_table_gives_the_fastest_and_slowest_and_judges_the_slowest():
    runs = iter([(0.1, 1.0), (0.3, 2.5), (0.2, 2.0), (0.1, 3.5)]
                + [(0.1, 0.5)] * (2 * len(first_call.CALLS) - 4))
    fresh = first_call.measure_fresh(2, lambda call, shape: next(runs))
    assert list(fresh) == [label for label, _, _ in first_call.CALLS]
    rows = {r[0]: r for r in _tables(first_call.fresh_table(fresh))[0]}
    assert rows["AveragePool 3x3"][1:] == ["0.10 (slowest 0.30)", "1.00 (slowest 2.50)",
                                           "<=3 met"]
    assert rows["LpPool p=2 3x3"][1:] == ["0.10 (slowest 0.20)", "2.00 (slowest 3.50)",
                                          "<=3 missed"]
    assert rows["Resize nearest 2x"][2:] == ["0.50 (slowest 0.50)", "<=3 met"]


def test_the_representative_calls_cover_every_operator_and_both_resize_modes():
    calls = " ".join(call for _, call, _ in first_call.CALLS)
    for name in ("average_pool", "lp_pool", "max_pool", "global_average_pool", "hardmax",
                 "mode='linear'", "mode='nearest'", "oc.upsample", "oc.max_unpool"):
        assert name in calls


def test_fresh_call_is_timed_in_a_new_process_with_an_empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ONNX_CUPY_CACHE", str(tmp_path))   # must not be the one it uses
    (call, shape), = [(c, s) for label, c, s in first_call.CALLS
                      if label.startswith("Hardmax")]       # Hardmax: one instantiation
    imported, seconds = first_call.fresh_call(call, shape)
    assert 0 < imported < 30
    assert 0.05 < seconds < 60    # it built a library: a cache hit would take milliseconds
    assert not list(tmp_path.iterdir())


def test_fresh_call_reports_a_failing_call(capsys):
    with pytest.raises(RuntimeError, match="fresh-process call oc.hardmax"):
        first_call.fresh_call("oc.hardmax(X, axis=7)", (2, 3))


@pytest.mark.parametrize("page", ["first_call_nvrtc.md", "first_call_emulated.md"])
def test_generated_page_lists_every_operator_and_its_instantiations(page):
    """The committed warm-up page (docs/_generated/, included by the warm-up page) lists exactly
    the operators that run kernels, each with as many instantiations as its command's selection
    holds now (the seconds are what that run measured: not compared). Regenerate with
    python docs/_tools/regenerate.py first_call_nvrtc first_call_emulated."""
    text = (ROOT / "docs" / "_generated" / page).read_text(encoding="utf-8")
    (command,) = re.findall(r"^- command: `onnx-cupy warmup ([^`]*)`", text, re.MULTILINE)
    chosen = re.search(r"--dtype (\S+)", command)
    kernels = warmup.instantiations(None, chosen.group(1).split(",") if chosen else None)
    wanted = {op: sum(op in k.ops for k in kernels) for op in warmup.operators()}
    listed = {row[0]: int(row[1]) for row in _tables(text)[0]}
    assert listed == wanted, f"docs/_generated/{page} is stale: regenerate it"
