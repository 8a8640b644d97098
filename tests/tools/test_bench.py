"""`onnx-cupy bench`: a quick run on the NumPy backend (table, JSON, Markdown, plot), the backend
checks, where reports go, the peers' models and settings, timing in turns, and target summaries."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import tempfile

import numpy as np
import pytest

from onnx_cupy.tools import bench, cli

OPS = ("AveragePool", "Hardmax")
DIFF = {"float32": 1e-5, "float16": 1e-2}   # max abs diff vs onnxruntime on N(0, 1) inputs
COLUMNS = ["case", "dtype", "size", "shape", "ms", "Melem/s", "x onnxruntime",
           "x onnx.reference", "max abs diff vs onnxruntime", "peak mem / (X+Y)"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    argv = ["bench", "--quick", "--backend", "numpy", "--out", str(out), "--direction", "forward"]
    for op in OPS:
        argv += ["--op", op]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = cli.main(argv)
    return rc, stdout.getvalue(), out


def _table(text, which=0):
    """(header, body) of the `which`-th Markdown table in `text`."""
    tables, lines = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            tables.append(lines)
            lines = []
    lines = tables[which]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return header, lines[2:]


def _expected_rows():
    return {(c.name, d) for c in bench.CASES if c.op in OPS and not c.backward
            for d in bench.DTYPES}


def test_terminal_table(quick):
    rc, stdout, _ = quick
    assert rc == 0
    (speed, body), (checks, checked) = _table(stdout), _table(stdout, 1)
    assert speed[:5] == ["case", "dtype", "size", "ms", "Melem/s"]
    assert checks[:4] == ["case", "dtype", "size", "shape"] and len(checked) == len(body)
    assert set(COLUMNS) <= set(speed) | set(checks)
    assert len(speed) <= 8 and len(checks) <= 6   # each fits a page's width
    assert "GB/s" not in speed + checks
    rows = {tuple(c.strip() for c in line.strip("|").split("|")[:2]) for line in body}
    assert len(body) == len(rows) and rows == _expected_rows()


def test_host_section(quick):
    """The host time per call on the stand-in: a row per operator (held to the targets) and
    per PyTorch-style function, run_node and the stand-in's own allocation and launch, each a
    median with its range; the targets judged on the operators' rows; the same in Markdown."""
    _, stdout, out = quick
    host = json.loads((out / "numpy-quick.json").read_text())["host"]
    judged = [r for r in host["rows"] if r["judged"]]
    assert len(judged) == sum(c.judged for c in bench.host.CALLS) == 19
    named = {r["call"].split()[0] for r in judged}   # every operator has a row
    assert set(bench.OPS) | {"AffineGrid"} == named
    backward = {r["call"].split()[0] for r in judged if " backward" in r["call"]}
    assert backward == set(bench.cases.GRADIENT_OPS)   # and every gradient
    assert {"F.avg_pool2d(x, 3, 2, 1)", "run_node(AveragePool node)",
            "MaxPool 3x3 s2 p1 backward: vjp (forward included)"} <= {
        r["call"] for r in host["rows"] if not r["judged"]}   # the last makes two calls
    for r in host["rows"]:
        assert 0 < r["us_range"][0] <= r["us"] <= r["us_range"][1] < 1e5, r
    t = host["targets"]
    assert t["median_us"] <= t["slowest_us"] == max(r["us"] for r in judged)
    assert t["median_met"] == (t["median_us"] <= bench.host.MEDIAN_TARGET_US)
    header, body = _table(stdout, 2)
    assert header == ["call (float32, repeated)", "us per call", "range", "held to the targets"]
    assert len(body) == len(host["rows"])
    assert "Targets (operators' rows): median " in stdout


def test_json_report(quick):
    _, _, out = quick
    report = json.loads((out / "numpy-quick.json").read_text())
    h = report["header"]
    assert h["backend"] == "numpy" and h["quick"] is True and h["gpu"] is None
    assert h["date"] and h["cpu"]
    assert all(v is None or v >= 0 for v in h["load_average"].values())
    assert all(h["versions"][k] for k in ("onnx-cupy", "numpy", "onnx", "onnxruntime"))
    assert {"onnxruntime", "onnx.reference"} <= set(report["peers"])
    assert report["targets"] == {"checked": 0, "met": 0, "missed": []}   # none under --quick
    ort = report["peer_settings"]["onnxruntime"]
    assert ort["version"] == h["versions"]["onnxruntime"]
    assert (ort["provider"], ort["intra_op_num_threads"], ort["inter_op_num_threads"]) == (
        "CPUExecutionProvider", 1, 1)
    assert (ort["graph_optimization_level"], ort["execution_mode"]) == (
        "ORT_ENABLE_ALL", "ORT_SEQUENTIAL")
    assert {(r["case"], r["dtype"]) for r in report["rows"]} == _expected_rows()
    for r in report["rows"]:
        assert r["ms"] > 0 and math.isfinite(r["melem_s"]) and r["melem_s"] > 0
        assert 0 <= r["ms_iqr"] < math.inf and "ms_iqr" in r["peers"]["onnxruntime"]
        for name in ("onnxruntime", "onnx.reference"):
            ratio = r["peers"][name]["ratio"]
            assert math.isfinite(ratio) and ratio > 0, (r["case"], name)
            assert "target" not in r["peers"][name]          # no targets under --quick
        for result in r["peers"].values():
            assert "ratio" in result or result["na"]
        assert r["correct"] is True
        assert r["op"] in " ".join(r["peers"]["onnxruntime"]["graph"])   # after optimization
        assert 0 <= r["max_abs_diff_vs_onnxruntime"] <= DIFF[r["dtype"]], r
        assert math.isfinite(r["peak_memory_ratio"]) and r["peak_memory_ratio"] > 0


def test_markdown_and_plot(quick):
    _, stdout, out = quick
    md = (out / "numpy-quick.md").read_text()
    assert md.startswith("# onnx-cupy benchmark")
    assert _table(md) == _table(stdout) and _table(md, 1) == _table(stdout, 1)
    assert _table(md, 2)[0] == _table(stdout, 2)[0]
    assert "Targets: none checked in this run." in md
    assert "- 1-minute load average at start / end: " in md
    assert "- onnxruntime: version: " in md and "graph_optimization_level: ORT_ENABLE_ALL" in md
    if importlib.util.find_spec("matplotlib"):
        assert (out / "numpy-quick.png").stat().st_size > 0
    else:
        assert "plot: skipped (matplotlib is not installed)" in md


@pytest.mark.parametrize("argv, message", [
    (["--backend", "cupy", "--quick"], "bench: backend 'cupy' cannot run here: no usable GPU: "
                                       "cudaErrorInsufficientDriver: "),
    (["--backend", "emulated"], "use it with --quick"),
])
def test_backend_refused(argv, message, no_gpu, capsys, tmp_path):
    assert cli.main(["bench", *argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def _synthetic(backend):
    row = {"case": "Hardmax axis=-1", "dtype": "float32", "shape": [4096, 1000], "ms": 1.25,
           "melem_s": 6553.6, "correct": False, "max_abs_diff_vs_onnxruntime": 1.0,
           "peers": {"onnxruntime": {"ratio": 0.75, "target": 1.0, "met": False},
                     "torch": {"na": "no PyTorch equivalent"}},
           "peak_memory_ratio": 1.5, "peak_memory_met": True,
           "gb_s": 2000.0, "copy_gb_s": 2500.0, "share_of_copy": 0.8}
    return {"header": {"backend": backend}, "peers": ["onnxruntime", "torch"], "rows": [row]}


@pytest.mark.parametrize("backend, cells", [
    ("numpy", ["0.75 >=1 MISS", "n/a", "1.0e+00 WRONG", "1.50 <=2 ok"]),
    ("cupy", ["0.75 >=1 MISS", "n/a", "2000", "2500", "80%"]),
])
def test_table_cells(backend, cells):
    header, body = _table(bench.table(_synthetic(backend)))
    row = [c.strip() for c in body[0].strip("|").split("|")]
    assert len(row) == len(header)
    assert all(c in row for c in cells), row
    assert ("GB/s" in header) == (backend == "cupy")
    assert ("peak mem / (X+Y)" in header) == (backend == "numpy")
    speed, checks = (_table(bench.table(_synthetic(backend), part))[0]
                     for part in ("speed", "checks"))
    assert speed[:3] == checks[:3] == ["case", "dtype", "size"]
    assert sorted({*speed, *checks}) == sorted(header)


# the bench of one operator's quick cases: a run short enough for a test of its outputs
ONE_OP = ["bench", "--quick", "--backend", "numpy", "--op", "Hardmax"]


def _run_cli(argv):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        rc = cli.main([*ONE_OP, *argv])
    return rc, stdout.getvalue()


@pytest.fixture
def temporary_root(monkeypatch, tmp_path):
    """tmp_path/"tmp" as the folder of this process's new temporary files and folders
    (tempfile.gettempdir), not made yet."""
    tmp = tmp_path / "tmp"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def test_default_out_is_a_new_temporary_folder(monkeypatch, tmp_path, temporary_root):
    cwd, tmp = tmp_path / "cwd", temporary_root
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    folders = []
    for _ in range(2):
        rc, stdout = _run_cli([])
        assert rc == 0
        (folder,) = set(tmp.iterdir()) - set(folders)
        folders.append(folder)
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            f"numpy-quick.{e}" for e in ("json", "md", "png")
            if e != "png" or importlib.util.find_spec("matplotlib"))
        assert f"wrote {folder / 'numpy-quick.json'}" in stdout
        assert "a new temporary folder; --out DIR writes elsewhere" in stdout
    assert not any(cwd.iterdir())     # nothing written to ./benchmarks/results


def test_out_writes_only_there(tmp_path, temporary_root):
    out = tmp_path / "given" / "dir"
    rc, stdout = _run_cli(["--out", str(out)])
    assert rc == 0 and "temporary" not in stdout
    assert (out / "numpy-quick.json").is_file()
    assert not temporary_root.exists()


def test_peer_model_as_exported():
    """Shapes declared on X and Y; Resize's scales an initializer, not a graph input."""
    case = next(c for c in bench.CASES if c.name == "Resize linear 2x half_pixel")
    model = bench.peers._model(case, "float16", (2, 3, 5, 7), (2, 3, 10, 14))
    (x,), (y,) = model.graph.input, model.graph.output
    dims = [[d.dim_value for d in v.type.tensor_type.shape.dim] for v in (x, y)]
    assert (x.name, y.name, dims) == ("X", "Y", [[2, 3, 5, 7], [2, 3, 10, 14]])
    (scales,) = model.graph.initializer
    assert scales.name == "scales" and list(model.graph.node[0].input) == ["X", "", "scales"]
    run, details = bench.peers._onnxruntime(case, "float16", (2, 3, 5, 7), (2, 3, 10, 14))
    assert run(np.ones((2, 3, 5, 7), np.float16)).shape == (2, 3, 10, 14)
    assert "Resize" in details["graph"]


class _Clock:
    """A fake clock: logs each start; its calls take 1, 2, 3, ... seconds."""

    def __init__(self, log, name):
        self.log, self.name, self.t = log, name, 0.0

    def start(self):
        self.log.append(self.name)

    def stop(self):
        self.t += 1.0
        return self.t


def test_contenders_timed_in_turns():
    log = []

    def failing(x):
        if log.count("c") == 3:
            raise RuntimeError("no kernel for this dtype")
        return x

    timed = [bench.timing._Timed(lambda x: x + 1, [10, 20], _Clock(log, "a"), 2, 5),
             bench.timing._Timed(lambda x: -x, [7], _Clock(log, "b"), 1, 3),
             bench.timing._Timed(failing, [0], _Clock(log, "c"), 1, 5)]
    bench.timing._in_turns(timed)
    assert "".join(log) == "abcabcabcabaaa"   # c stops at its error, b after 1 + 3 calls
    a, b, c = timed
    assert a.times == [3.0, 4.0, 5.0, 6.0, 7.0] and a.seconds == 5.0   # warm-ups not counted
    assert a.spread() == {"ms_iqr": 3000.0} and c.spread() == {}
    assert a.y == 11 and b.y == -7 and b.times == [2.0, 3.0, 4.0]
    assert isinstance(c.error, RuntimeError) and c.times == [2.0]
    assert bench.timing._na(c.error) == {"na": "RuntimeError: no kernel for this dtype"}


@pytest.mark.parametrize(("quick", "call_seconds", "counts"), [
    (False, 0.0, (3, 25)),        # not measured: the fewest
    (False, 0.05, (3, 25)),       # a long call: the fewest
    (False, 1e-3, (20, 100)),     # 20 ms of warm-up calls, 0.1 s of timed ones
    (False, 1e-6, (2000, 2000)),  # a short call: at most MOST_CALLS of each
    (True, 1e-6, (1, 3)),         # --quick: always the fewest
])
def test_short_calls_are_timed_more_often(quick, call_seconds, counts):
    t = bench.Run("numpy", quick, []).timed(lambda x: x, [0], False, call_seconds)
    assert (t.warmup, t.repeats) == counts


def test_target_summary_names_each_miss():
    report = _synthetic("numpy")
    met = dict(report["rows"][0], case="Hardmax axis=1 (middle)", peak_memory_met=True,
               peers={"onnxruntime": {"ratio": 1.25, "target": 1.0, "met": True}})
    over = dict(met, dtype="float16", peak_memory_ratio=2.5, peak_memory_met=False, peers={})
    targets = bench.report.target_summary([*report["rows"], met, over])
    assert targets == {"checked": 5, "met": 3, "missed": [
        "Hardmax axis=-1 float32: x onnxruntime 0.75 < 1",
        "Hardmax axis=1 (middle) float16: peak memory 2.50 > 2"]}
    assert bench.report._target_line(targets).splitlines() == [
        "Targets: 3 of 5 met.", "- MISSED: Hardmax axis=-1 float32: x onnxruntime 0.75 < 1",
        "- MISSED: Hardmax axis=1 (middle) float16: peak memory 2.50 > 2"]


def test_sizes_and_their_targets():
    """Every case runs at batch 1 and tiny beside its canonical shape (--quick: its quick shape
    only); onnxruntime's target holds at every size (AveragePool, LpPool and Resize linear
    0.5x at batch 1 and tiny, MaxPool 0.3x at batch 1), PyTorch's (MaxPool 1x) at batch 1 and
    canonical, onnx.reference's at canonical only, none for float16."""
    for case in bench.CASES:
        assert list(case.shapes(quick=False)) == list(bench.SIZES), case.name
        assert case.shapes(quick=True) == {"canonical": case.quick}
    pools = {c.name: c for c in bench.CASES}
    average, maxpool = pools["AveragePool 3x3 s2 p1"], pools["MaxPool 3x3 s2 p1"]
    assert average.shapes(False) == {"tiny": (1, 3, 8, 8), "batch 1": (1, 64, 56, 56),
                                     "canonical": (8, 64, 112, 112)}
    assert pools["Resize linear 2x half_pixel"].shapes(False)["batch 1"] == (1, 3, 224, 224)
    assert average.targets("float32", "tiny") == {"onnxruntime": 0.5}
    assert average.targets("float32", "canonical") == {"onnxruntime": 0.5, "onnx.reference": 100}
    assert maxpool.targets("float32", "batch 1") == {"onnxruntime": 0.3, "torch": 1.0}
    assert maxpool.targets("float32", "tiny") == {}
    assert maxpool.targets("float16", "batch 1") == {}
    for name in ("LpPool p=2 3x3 s2 p1", "Resize linear 2x half_pixel"):
        assert pools[name].targets("float32", "batch 1")["onnxruntime"] == 0.5


def test_a_tiny_call_is_held_to_its_time():
    """A tiny float32 row's time alone is judged against TINY_TARGET_US, on the median of the
    runs; its time in turns with the peers is shown beside it."""
    row = {"case": "Hardmax axis=-1", "dtype": "float32", "size": "tiny", "ms": 0.05,
           "ms_alone": 0.03, "ms_target": bench.TINY_TARGET_US / 1e3, "ms_met": False,
           "melem_s": 1.0, "peers": {}}
    merged = bench.merge([dict(row, ms_alone=0.02), dict(row, ms_alone=0.03),
                          dict(row, ms_alone=0.01, ms=0.04)], bench.Run("numpy", False, []))
    assert merged["ms_alone"] == 0.02 and merged["ms_met"] is True and merged["ms"] == 0.05
    assert bench.report.target_summary([row]) == {"checked": 1, "met": 0, "missed": [
        "Hardmax axis=-1 tiny float32: 30.0 us alone > 25 us"]}
    assert bench.report._ms_cell(merged) == "0.05 (0.04-0.05), alone 0.02 (0.01-0.03) <=0.025 ok"


def test_a_tiny_row_times_ours_alone_too(monkeypatch):
    """A judged tiny row makes one more contender of ours, timed with no peer in between."""
    turns = []
    monkeypatch.setattr(bench.timing, "_in_turns", lambda timed: turns.append(len(timed)) or [
        t.times.extend([1e-5, 2e-5, 3e-5]) for t in timed])
    case = next(c for c in bench.CASES if c.op == "Hardmax")
    row = bench.measure(case, "float32", bench.Run("numpy", False, []), "tiny")
    assert turns == [1, 1]   # ours (no peers here), then ours alone
    assert row["ms_alone"] == 0.02 and row["ms_met"] is True


def test_repeated_runs_merge_to_median_and_range():
    """Three runs of one row: ratios and times as median with [min, max], the target judged on
    the median, the largest difference and peak memory kept, a peer n/a in one run n/a."""
    def measured(ratio, ms, peak, torch):
        return {"case": "Hardmax axis=-1", "dtype": "float32", "ms": ms, "melem_s": 1000 / ms,
                "peak_memory_ratio": peak, "peak_memory_met": peak <= 2,
                "peers": {"onnxruntime": {"ms": ms * ratio, "melem_s": 1000 / ms / ratio,
                                          "ratio": ratio, "max_abs_diff": ratio / 10,
                                          "target": 1.0, "met": ratio >= 1.0},
                          "torch": torch}}
    runs = [measured(0.9, 2.0, 0.5, {"ratio": 1.0, "ms": 1.0, "melem_s": 1.0,
                                     "max_abs_diff": 0.0}),
            measured(1.7, 1.0, 0.75, {"na": "outputs differ from ours"}),
            measured(1.2, 3.0, 0.25, {"ratio": 1.0, "ms": 1.0, "melem_s": 1.0,
                                      "max_abs_diff": 0.0})]
    row = bench.merge(runs, bench.Run("numpy", False, []))
    ort = row["peers"]["onnxruntime"]
    assert (ort["ratio"], ort["ratio_range"], ort["met"]) == (1.2, [0.9, 1.7], True)
    assert ort["max_abs_diff"] == pytest.approx(0.17) and row["correct"] is True
    assert (row["ms"], row["ms_range"], row["runs"]) == (2.0, [1.0, 3.0], 3)
    assert row["peak_memory_ratio"] == 0.75 and row["peak_memory_met"] is True
    assert row["peers"]["torch"] == {"na": "outputs differ from ours"}
    assert bench.report._peer_cell(ort) == "1.2 (0.9-1.7) >=1 ok"
    assert bench.report._peer_cell({"ratio": 2.0, "ratio_range": [2.0, 2.0]}) == "2"


def test_repeat_writes_the_markdown_summary(tmp_path):
    page = tmp_path / "docs" / "bench.md"
    stderr = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(stderr):
        rc = cli.main([*ONE_OP, "--out", str(tmp_path / "r"), "--repeat", "3",
                       "--markdown", str(page), "--note", "a shared machine"])
    assert rc == 0
    assert stderr.getvalue() == ""             # no progress line where stderr is not a terminal
    report = json.loads((tmp_path / "r" / "numpy-quick.json").read_text())
    assert report["header"]["repeat"] == 3 and report["header"]["note"] == "a shared machine"
    assert report["rows"] and {row["case"] for row in report["rows"]} <= {
        c.name for c in bench.CASES if c.op == "Hardmax"}
    for row in report["rows"]:
        assert row["runs"] == 3
        low, high = row["peers"]["onnxruntime"]["ratio_range"]
        assert low <= row["peers"]["onnxruntime"]["ratio"] <= high
    text = page.read_text()
    assert not text.startswith("#") and "- note: a shared machine" in text
    assert "- 3 runs of every row in one invocation" in text and "- date: " in text
    assert _table(text) == _table(bench.table(report, "speed"))
    assert _table(text, 1) == _table(bench.table(report, "checks"))


def test_repeat_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        cli.main(["bench", "--repeat", "0"])
    assert "must be >= 1" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal():
    from onnx_cupy.tools.progress import Progress

    shown, piped = _Terminal(), io.StringIO()
    for stream in (shown, piped):
        with Progress(2, stream) as bar:
            bar.step("Hardmax float32")
            bar.step("Resize float16")
    assert piped.getvalue() == ""
    text = shown.getvalue()
    assert "\r[1/2] Hardmax float32 (" in text and "\r[2/2] Resize float16 (" in text
    assert text.endswith("\r")                 # the line is cleared at the end


def test_from_json_writes_the_reports_again_without_measuring(quick, tmp_path, monkeypatch):
    """--from-json: the same report and Markdown from an earlier run's JSON, nothing timed."""
    _, _, out = quick
    monkeypatch.setattr(bench, "run", lambda *a, **k: pytest.fail("measured again"))
    page = tmp_path / "page.md"
    rc, _ = _run_cli(["--from-json", str(out / "numpy-quick.json"), "--out", str(tmp_path / "r"),
                      "--markdown", str(page)])
    report = json.loads((out / "numpy-quick.json").read_text())
    assert rc == 0 and json.loads((tmp_path / "r" / "numpy-quick.json").read_text()) == report
    assert page.read_text() == bench.summary(report)
    assert (tmp_path / "r" / "numpy-quick.md").read_text() == (out / "numpy-quick.md").read_text()
