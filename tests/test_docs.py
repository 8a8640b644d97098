"""Public functions carry NumPy-style docstrings whose examples run; the generated tables the
documentation includes match what their commands produce."""
from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    tomllib = pytest.importorskip("tomli")

import onnx_cupy
from onnx_cupy import onnx_backend
from onnx_cupy.core import dtypes, opsets
from onnx_cupy.grid import plan as grid_plan
from onnx_cupy.hardmax import plan as hardmax_plan
from onnx_cupy.pool import plan as pool_plan
from onnx_cupy.resize import plan as resize_plan
from onnx_cupy.roi import plan as roi_plan
from onnx_cupy.tools import kernel_report
from onnx_cupy.unpool import plan as unpool_plan

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text(encoding="utf-8")

MODULES = ["onnx_cupy.pool.api", "onnx_cupy.hardmax.api", "onnx_cupy.resize.api",
           "onnx_cupy.unpool.api", "onnx_cupy.roi.api", "onnx_cupy.interop.ops",
           "onnx_cupy.grid.api",
           "onnx_cupy.interop.dask", "onnx_cupy.interop.onnx_backend", "onnx_cupy.interop.nodes",
           "onnx_cupy.core.execution", "onnx_cupy.core.warmup", "onnx_cupy.interop.functional",
           "onnx_cupy.core.checker", "onnx_cupy.interop.vjp"]
SECTIONS = ("Parameters\n", "Returns\n", "Raises\n", "Examples\n")


@pytest.mark.parametrize("module", MODULES)
def test_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


def _exported(module: str) -> list:
    """The functions `module` exports (as the API page lists them: docs/_ext/exports.py)."""
    spec = importlib.util.spec_from_file_location("public_names",
                                                  DOCS / "_ext" / "public_names.py")
    exports = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exports)
    return [getattr(importlib.import_module(module), n) for n in exports.public_names(module)]


# every operator a user calls, wherever it is exported (the execution-path helpers and the
# onnx.backend plumbing aside)
DOCUMENTED = [f for f in _exported("onnx_cupy")
              if f not in (onnx_cupy.backend, onnx_cupy.default_backend,
                           onnx_cupy.release_workspaces)] + \
    _exported("onnx_cupy.nn.functional") + _exported("onnx_cupy.ops") + \
    _exported("onnx_cupy.dask") + \
    [onnx_backend.prepare, onnx_backend.run_node]


@pytest.mark.parametrize("fn", DOCUMENTED, ids=lambda f: f"{f.__module__}.{f.__qualname__}")
def test_numpy_style_sections(fn):
    doc = fn.__doc__ or ""
    assert all(s in doc for s in SECTIONS), [s.strip() for s in SECTIONS if s not in doc]


def _without_run_details(markdown: str) -> list[str]:
    """A generated page's lines but its header ("- date: ...", host, versions): the tables and
    the lines below them."""
    return [line for line in markdown.splitlines() if not line.startswith("- ")]


def test_design_page_includes_the_kernel_summary():
    """docs/design.md takes its kernel figures from the generated summary: it includes the part
    of docs/_generated/kernels.md between the summary markers, and quotes no report rows."""
    design = (DOCS / "design.md").read_text(encoding="utf-8")
    (include,) = re.findall(r"```\{include\} _generated/kernels\.md\n(.*?)```", design,
                            re.DOTALL)
    assert include.splitlines() == [f":start-after: {kernel_report.SUMMARY_START}",
                                    f":end-before: {kernel_report.SUMMARY_END}"]
    committed = (DOCS / "_generated" / "kernels.md").read_text(encoding="utf-8")
    start, end = (committed.index(m) for m in (kernel_report.SUMMARY_START,
                                               kernel_report.SUMMARY_END))
    assert start < end and "| kernel | offsets |" in committed[start:end]
    assert "[fast x" not in design and not re.search(r"\d+ of \d+ instantiations", design)


@pytest.mark.slow   # NVRTC or g++ builds of whole families
def test_generated_kernel_report_is_current():
    """docs/_generated/kernels.md, its summary included, is what `onnx-cupy kernels --markdown`
    writes now (the families compiled once per process: the kernel report tests' compilations
    are reused), when NVRTC and the disassembler are the versions its header names."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda.bindings is not installed")
    if kernel_report.nvdisasm() is None:
        pytest.skip(f"{kernel_report.NVDISASM_WHEEL} is not installed: no SASS counts")
    committed = (DOCS / "_generated" / "kernels.md").read_text(encoding="utf-8")
    compilers = re.compile(r"(?:NVRTC|nvdisasm) [\d.?]+")   # what decides registers and SASS
    written = compilers.findall(committed.split("\n- versions: ", 1)[-1].split("\n", 1)[0])
    installed = compilers.findall(kernel_report._versions())
    if written != installed:   # a compiler release changes the figures, not onnx-cupy
        pytest.skip(f"docs/_generated/kernels.md was written with {', '.join(written)}, this "
                    f"run has {', '.join(installed)}: regenerate it with onnx-cupy kernels "
                    "--markdown docs/_generated/kernels.md")
    fresh = kernel_report.markdown(kernel_report.report())
    assert "| kernel | regs |" in fresh and fresh.count("\n|") > 100
    assert fresh.index(kernel_report.SUMMARY_START) < fresh.index(kernel_report.SUMMARY_END)
    assert _without_run_details(committed) == _without_run_details(fresh), (
        "docs/_generated/kernels.md is stale: run "
        "onnx-cupy kernels --markdown docs/_generated/kernels.md")


# ------------------------------------------------------------------------------ the README

def test_readme_is_a_front_page():
    """Short, and every link absolute: the README is also PyPI's page, where relative links
    and images do not resolve."""
    assert len(README.splitlines()) <= 200
    targets = re.findall(r"\]\(([^)]*)\)", README) + re.findall(r"<img[^>]+src=\"([^\"]*)", README)
    assert all(t.startswith(("https://", "http://")) for t in targets), targets


def test_readme_commands_are_what_ci_runs_first():
    """.ci/run starts with the README's two commands as written, each in a fresh virtual
    environment (so with only the extras it names); every other step comes after them."""
    commands = [line for line in README.splitlines() if line.startswith("python3 -m venv")]
    assert len(commands) == 2 and '".[test]"' in commands[1], commands
    steps = [step.strip() for step in commands[1].split("&&")]
    assert steps == ["python3 -m venv .venv", '.venv/bin/pip install ".[test]"',
                     ".venv/bin/python -m pytest -q"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "step ", "step()", "set ", "cd ", "echo"))]
    assert ci[:4] == ["rm -rf .venv", commands[0], "rm -rf .venv", commands[1]], ci[:4]
    assert any(line.startswith(".venv/bin/ruff check") for line in ci[4:]), ci
    assert "-W" in next(line for line in ci if "sphinx" in line)


def test_ci_runs_the_tests_that_need_pytorch_last():
    """.ci/run installs torch into .venv after every other step has run without it, then runs
    every test module that skips or changes without torch (torchvision's excepted: CI does not
    install it)."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().replace("\\\n", " ").splitlines()
          if line.startswith(".venv/bin/")]
    install = next(i for i, line in enumerate(ci) if re.match(r"\.venv/bin/pip install .*torch==",
                                                               line))
    assert all("torch" not in line for line in ci[:install]), ci[:install]
    run = " ".join(ci[install + 1:])
    needing = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
                     if re.search(r"importorskip\(\s*\"torch\"|find_spec\(\"torch\"\)",
                                  text := path.read_text(encoding="utf-8"))
                     and "torchvision" not in text)
    assert "tests/interop/test_autograd.py" in needing
    assert [m for m in needing if m not in run.split()] == [], run


def _suite_script():
    spec = importlib.util.spec_from_file_location("suite", DOCS / "_tools" / "suite.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_test_command_gives_the_measured_durations():
    """The comment above the README's test command is what docs/_tools/suite.py wrote from its
    measurements (docs/_generated/suite.md, which the testing page includes)."""
    suite = _suite_script()
    page = suite.PAGE.read_text(encoding="utf-8")
    lines = README.splitlines()
    at = next(i for i, line in enumerate(lines) if '".[test]"' in line)
    start = max(i for i in range(at) if lines[i].startswith("# tests:"))
    assert lines[start:at] == suite.readme_comment(suite.read(page), suite.cpus_of(page)), (
        f"regenerate with {suite.COMMAND}")
    assert "```{include} _generated/suite.md\n```" in (DOCS / "testing.md").read_text(
        encoding="utf-8")


def test_suite_page_reads_back_what_it_writes():
    suite = _suite_script()
    runs = [suite.Run(name, "10 passed", seconds)
            for name, seconds in zip(suite.RUNS, (622.4, 59.6, 3.0))]
    page = suite.page(runs)
    assert suite.read(page) == {"cold": 622, "warm": 60, "slow": 3}
    assert suite.cpus_of(page) and "| 10 min 22 s |" in page and "| 3 s |" in page
    comment = suite.readme_comment(suite.read(page), 2)
    assert all(len(line) <= 100 and line.startswith("# ") for line in comment)
    assert "about 10 minutes on 2 cores" in " ".join(comment)
    assert suite.rewrite_readme("a\n# tests: x\n# y\n" + '.venv/bin/pip install ".[test]"',
                                ["# tests: z"]).split("\n") == ["a", "# tests: z",
                                                                '.venv/bin/pip install ".[test]"']


OPERATORS = sorted(opsets.ATTRIBUTES)


@pytest.mark.parametrize("where", ["README.md", "pyproject.toml", "docs/index.md",
                                   "src/onnx_cupy/__init__.py"])
def test_every_operator_is_named_up_front(where):
    """The README's first paragraph, the package description, the docs' index and the
    package docstring name every operator."""
    text = (ROOT / where).read_text(encoding="utf-8")
    if where == "pyproject.toml":
        text = re.search(r'^description = "(.*)"$', text, re.MULTILINE).group(1)
    elif where.endswith(".md"):
        text = text.split("\n\n")[1]
    elif where.endswith(".py"):
        text = onnx_cupy.__doc__.replace("the global pools", "GlobalAveragePool GlobalMaxPool "
                                         "GlobalLpPool")
    assert {"AveragePool", "GlobalLpPool", "Hardmax", "MaxPool", "Resize"} <= set(OPERATORS)
    missing = [op for op in OPERATORS if not re.search(rf"\b{op}\b", text)]
    assert not missing, (where, missing)


def test_readme_docs_command_builds_into_an_ignored_folder():
    (command,) = re.findall(r"python -m sphinx[^`]*", README)
    out = command.split()[-1]
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    res = subprocess.run(["git", "check-ignore", "-q", f"{out}/index.html"], cwd=ROOT,
                         check=False)
    assert res.returncode == 0, f"{out}/ would be left untracked by the README's docs command"


def test_contributing_tools_come_with_the_test_extra():
    """Every .venv/bin tool that CONTRIBUTING.md runs is installed by the extra it installs."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    installed = {re.split(r"[<>=\[ ]", r)[0] for r in extras["test"]}
    tools = set(re.findall(r"\.venv/bin/(\w+) ", contributing)) - {"python", "pip", "onnx"}
    assert {"ruff", "mypy"} <= tools <= installed | {"onnx-cupy"}, (tools, installed)


def test_usage_graph_capture_example_runs_on_the_standin(monkeypatch, tmp_path):
    """docs/usage.md's CUDA graph example, as pasted, with the stand-in cupy (which refuses
    what CUDA refuses during a capture) as `cupy`: the captured graph holds the three kernels,
    and each replay launches them."""
    from helpers.standin import StandIn

    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"## Repeated calls and CUDA graphs\n.*?```python\n(.*?)```", usage,
                          re.DOTALL)
    fake = StandIn()
    monkeypatch.setitem(sys.modules, "cupy", fake)
    example = tmp_path / "usage_graph_example.py"
    example.write_text(block, encoding="utf-8")
    with fake.installed():
        namespace = runpy.run_path(str(example))
    captured = namespace["graph"].captured
    kernels = [k.expression for k in captured]
    assert len(captured) == 3 and all(k.captured for k in captured)
    run = [k.expression for k in fake.launches if k.expression in kernels and not k.captured]
    assert run == kernels * 4   # the first calls, then three replays


def _support_matrix() -> dict[str, dict[str, str]]:
    lines = README[README.index("## Support"):].splitlines()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith("|")]
    header, body = rows[0], rows[2:]
    return {row[0]: dict(zip(header, row)) for row in body}


MODES = ("nearest", "linear", "cubic")
# the dtype tables per operator, by mode (one table, mode "", where the modes take the same)
TABLES = {**{op: {"": table} for op, table in pool_plan.DTYPES.items()},
          **{op: {"": table} for op, table in hardmax_plan.DTYPES.items()},
          "Resize": resize_plan.DTYPES, "Upsample": resize_plan.UPSAMPLE_DTYPES,
          "MaxUnpool": {"": unpool_plan.DTYPES}, "GridSample": grid_plan.DTYPES,
          "AffineGrid": {"": grid_plan.THETA_DTYPES},
          **{op: {"": table} for op, table in roi_plan.DTYPES.items()}}
# the operators whose modes take different dtypes, and the modes of each version
MODED = {"Resize": resize_plan.MODES,
         "Upsample": dict.fromkeys(opsets.ATTRIBUTES["Upsample"], resize_plan.UPSAMPLE_MODES),
         "GridSample": dict.fromkeys(opsets.ATTRIBUTES["GridSample"], MODES)}
INTS = tuple(dtypes.INT_TYPES)
OTHERS = ("bool", "complex64", dtypes.STRING)


def _takes(op: str, version: int, name: str, mode: str = "") -> bool:
    """Whether the tables say `op`-`version` takes the dtype `name` (in `mode`)."""
    return TABLES[op][mode].get(name, version + 1) <= version


def _accepts(op: str, version: int, dtype: str, backend: str, mode: str = "nearest") -> bool:
    """Whether `op` at opset `version` (Resize: in `mode`) takes an input of `dtype` (False: a
    TypeError)."""
    rng = np.random.default_rng(version)
    x = rng.standard_normal((1, 1, 5)) * 4
    x = x.astype(np.dtype(dtypes.BFLOAT16) if dtype == "bfloat16" else dtype) \
        if dtype != dtypes.STRING else x.astype(str)
    call = {"AveragePool": lambda: onnx_cupy.average_pool(x, kernel_shape=[2], opset=version),
            "LpPool": lambda: onnx_cupy.lp_pool(x, kernel_shape=[2], opset=version),
            "MaxPool": lambda: onnx_cupy.max_pool(x, kernel_shape=[2], opset=version),
            "GlobalAveragePool": lambda: onnx_cupy.global_average_pool(x, opset=version),
            "GlobalMaxPool": lambda: onnx_cupy.global_max_pool(x, opset=version),
            "GlobalLpPool": lambda: onnx_cupy.global_lp_pool(x, opset=version),
            "Hardmax": lambda: onnx_cupy.hardmax(x, axis=2, opset=version),
            "Resize": lambda: onnx_cupy.resize(x, scales=np.array([1, 1, 2], np.float32),
                                               mode=mode, opset=version),
            "Upsample": lambda: onnx_cupy.upsample(x, np.array([1, 1, 2], np.float32),
                                                   mode=mode, opset=version),
            "MaxUnpool": lambda: onnx_cupy.max_unpool(x, np.arange(5).reshape(1, 1, 5) * 2,
                                                      kernel_shape=[2], strides=[2],
                                                      opset=version),
            "GridSample": lambda: onnx_cupy.grid_sample(
                x.reshape(1, 1, 1, 5), np.zeros((1, 2, 3, 2), np.float32), opset=version,
                mode=next(m for m in grid_plan.MODES[opsets.version("GridSample", version)]
                          if grid_plan.KINDS[m] == mode)),
            "AffineGrid": lambda: onnx_cupy.affine_grid(np.ones((1, 2, 3), x.dtype), [1, 1, 2, 2],
                                                        opset=version),
            "RoiAlign": lambda: onnx_cupy.roi_align(
                x.reshape(1, 1, 1, 5), np.ones((1, 4), x.dtype), np.zeros(1, np.int64),
                opset=version),
            "MaxRoiPool": lambda: onnx_cupy.max_roi_pool(
                x.reshape(1, 1, 1, 5), np.zeros((1, 5), x.dtype), pooled_shape=[1, 1],
                opset=version)}
    try:
        with onnx_cupy.backend(backend):
            call[op]()
    except TypeError:
        return False
    return True


def _cell(op: str, names: tuple[str, ...], every: str) -> str:
    """The README's cell for the dtypes `names`: "no", `every` where every mode of every version
    takes them all, else "[<dtypes> ]from <version>" (per version that brought some, in mode
    nearest for Resize; the dtypes named where the column has several)."""
    tables = TABLES[op]
    first = min(opsets.ATTRIBUTES[op])
    if not any(n in t for t in tables.values() for n in names):
        return "no"
    if all(t.get(n) == first for t in tables.values() for n in names):
        return every
    table = tables.get("nearest", tables.get(""))
    brought = sorted({table[n] for n in names if n in table})
    lines = [(", ".join(n for n in names if table.get(n) == v) + " " if len(names) > 1 else "")
             + f"from {v}" for v in brought]
    return "; ".join(lines)


@pytest.mark.parametrize("op", sorted(opsets.ATTRIBUTES))
def test_readme_support_matrix(op, cpu_backend):
    """Each row of the README's support table is what the operator's per-version dtype table
    says (pool.plan.DTYPES, hardmax.plan.DTYPES, resize.plan.DTYPES), and each version accepts
    exactly the dtypes its table lists, in every mode, on the NumPy and emulated paths."""
    row = _support_matrix()[op]
    versions = sorted(opsets.ATTRIBUTES[op])
    assert row["versions (opset)"] == ", ".join(map(str, versions))
    assert row["paths"] == "cupy, numpy, emulated"
    assert row["float16, float32, float64"] == _cell(op, dtypes.FLOATS, "every version")
    assert row["bfloat16"] == _cell(op, ("bfloat16",), "every version")
    assert row["integer types"] == _cell(op, INTS, "every mode")
    others = _cell(op, OTHERS, "")
    if op in MODED:   # "nearest": mode nearest takes them from the first version, no other
        assert row["bool, complex, string"] == "nearest"
        assert others == f"{', '.join(OTHERS)} from {versions[0]}"
        assert all(n not in TABLES[op][m] for m in TABLES[op] if m != "nearest" for n in OTHERS)
    else:
        assert row["bool, complex, string"] == others
    names = (*dtypes.FLOATS, "bfloat16", *INTS, *OTHERS[:2],
             *([dtypes.STRING] if cpu_backend == "numpy" else []))   # strings: NumPy only
    for v in versions:
        modes = [m for m in MODES if m in MODED[op][v]] if op in MODED else [""]
        for mode in modes:
            took = {n: _accepts(op, v, n, cpu_backend, mode or "nearest") for n in names}
            assert took == {n: _takes(op, v, n, mode) for n in names}, (op, v, mode)


# pages that still name one as code, with the names: remove an entry once linked
NAMED_AS_CODE: dict[str, list[str]] = {}


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_pages_link_to_pages(page):
    """A page names another page by a link, which the site resolves, not as code text."""
    text = (DOCS / page).read_text(encoding="utf-8")
    pages = {p.name for p in DOCS.glob("*.md")}
    named = [m for m in re.findall(r"`(?:docs/)?([a-z_]+\.md)(?:#[^`]*)?`", text) if m in pages]
    assert named == NAMED_AS_CODE.get(page, []), f"{page} names {named} as code: link it"


def test_api_pages_document_every_export_once():
    """The per-family API pages (docs/api-*.md, their `exports` directives) between them cover
    every public name of the modules the README shows, each once."""
    spec = importlib.util.spec_from_file_location("public_names",
                                                  DOCS / "_ext" / "public_names.py")
    names = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(names)
    modules = ["onnx_cupy", "onnx_cupy.nn.functional", "onnx_cupy.ops", "onnx_cupy.dask",
               "onnx_cupy.onnx_backend"]
    documented = []
    for page in sorted(DOCS.glob("api-*.md")):
        for module, options in re.findall(r"```\{exports\} (\S+)\n((?::[^\n]*\n)*)```",
                                          page.read_text(encoding="utf-8")):
            prefixes = re.search(r":defined-in: (.*)", options)
            chosen = names.defined_in(module, prefixes.group(1).split() if prefixes else [])
            documented += [f"{module}.{n}" for n in chosen]
    wanted = [f"{m}.{n}" for m in modules for n in names.public_names(m)]
    assert sorted(documented) == sorted(wanted)


def test_every_generated_page_has_its_command():
    """docs/_tools/regenerate.py regenerates every committed page of docs/_generated/, each with
    the command its header names where it names one."""
    spec = importlib.util.spec_from_file_location("regenerate", DOCS / "_tools" / "regenerate.py")
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    commands = " ".join(command for command, _, _ in regenerate.PAGES.values())
    for page in sorted((DOCS / "_generated").glob("*.md")):
        assert f"docs/_generated/{page.name}" in commands or page.stem in regenerate.PAGES, page
        named = re.search(r"(?:written by|- command:) `([^`]*)`", page.read_text(encoding="utf-8"))
        if named and named.group(1).startswith("onnx-cupy "):
            assert named.group(1) in commands, (page.name, named.group(1))
