"""Every code block of the README and the documentation runs as pasted.

- A Python block runs in a fresh interpreter from an empty folder; where a ```text block follows
  it, that is what it prints.
- A Python block whose first line is a comment starting "# runs on a GPU" runs against the
  stand-in cupy (tests/helpers/standin.py: arrays that say they live on a device, launches
  recorded and run on the emulator) and must compile and launch kernels (a warm-up: compile them).
- A Python block whose first line starts "# runs with PyTorch" runs where torch is importable
  (CI's PyTorch step runs them; skipped elsewhere, with the reason).
- A Python block whose first line starts "# not run in the test suite:" says why; it must compile.
- Each page's first Python block is a CPU example.
- Each `onnx-cupy ...` command of a shell block is one the command line accepts, and every
  `pip install` names extras that exist (from a clone: onnx-cupy is not on a package index).
- Every `onnx_cupy.x.y` a page names exists.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onnx_cupy.tools import cli

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md",
         *sorted((ROOT / "docs").glob("*.md"))]
GPU = "# runs on a GPU"
NOT_RUN = "# not run in the test suite:"
TORCH = "# runs with PyTorch"
SHELLS = ("bash", "console", "sh", "shell")


@dataclasses.dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    output: str | None   # the ```text block right after it, if any

    @property
    def kind(self) -> str:
        first = self.code.splitlines()[0] if self.code.strip() else ""
        return "gpu" if first.startswith(GPU) else "not run" if first.startswith(NOT_RUN) \
            else "torch" if first.startswith(TORCH) else "cpu"

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page (MyST directives, ```{name}, left out), each
    with the ```text block that follows it with nothing between them."""
    found: list[Block] = []
    opened: tuple[int, str, list[str]] | None = None   # line, info string, lines
    after = ""   # what stands between the last block and here
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)", line)
        if opened is None and fence:
            opened = (number, fence.group(1), [])
        elif opened is not None and line.strip() == "```":
            start, info, lines = opened
            code = textwrap.dedent("\n".join(lines)) + "\n"
            if info == "text" and found and not after.strip() and found[-1].output is None:
                found[-1].output = code
            elif not info.startswith("{"):
                found.append(Block(page, start, info, code, None))
            opened, after = None, ""
        elif opened is not None:
            opened[2].append(line)
        else:
            after += line
    return found


ALL = [b for page in PAGES for b in blocks(page)]
PYTHON = [b for b in ALL if b.language == "python"]
SHELL = [b for b in ALL if b.language in SHELLS]

# The stand-in cupy as a module: its arrays, modules and launches, plus the few NumPy-like
# functions that examples call (arrays made on the host and said to live on the device).
STAND_IN = """
import contextlib, sys, types
import numpy as np
import pytest
from helpers import fake_cupy
from helpers.standin import StandIn

fake_cupy.fresh_kernel_cache(pytest.MonkeyPatch())
installed = contextlib.ExitStack()   # for the rest of the process
fake = installed.enter_context(StandIn().installed())
rng = np.random.default_rng(0)
random = types.SimpleNamespace(
    standard_normal=lambda shape, dtype=np.float64: fake.asarray(
        rng.standard_normal(shape).astype(dtype)),
    rand=lambda *shape, dtype=np.float64: fake.asarray(rng.random(shape).astype(dtype)),
    uniform=lambda low=0.0, high=1.0, size=None, dtype=np.float64: fake.asarray(
        rng.uniform(low, high, size).astype(dtype)))


def _host(a):
    return a.host if isinstance(a, fake.ndarray) else a


# array functions made on the host: the device array's host copy in, a device array out
made = {"asarray": lambda a, dtype=None: fake.asarray(np.asarray(_host(a), dtype)),
        "tile": lambda a, reps: fake.asarray(np.tile(_host(a), reps))}


class Cupy(types.ModuleType):
    def __getattr__(self, name):
        if name == "random":
            return random
        if name in made:
            return made[name]
        if hasattr(fake, name):
            return getattr(fake, name)
        return getattr(np, name)   # dtypes


sys.modules["cupy"] = Cupy("cupy")
code = open(sys.argv[1], encoding="utf-8").read()
exec(compile(code, sys.argv[1], "exec"), {"__name__": "__main__"})
print(f"compiled: {len(fake.modules)}, launches: {len(fake.launches)}", file=sys.stderr)
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600, check=False)


@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_python_block_runs_as_pasted(block, tmp_path):
    example = tmp_path / "example.py"
    example.write_text(block.code, encoding="utf-8")
    if block.kind == "not run":
        reason = block.code.splitlines()[0].removeprefix(NOT_RUN).strip()
        assert len(reason) > 10, f"{block}: say why it cannot run"
        compile(block.code, str(block), "exec")
        return
    if block.kind == "torch" and importlib.util.find_spec("torch") is None:
        compile(block.code, str(block), "exec")
        pytest.skip(f"{block}: PyTorch is not installed (the live PyTorch examples run in "
                    f"CI's PyTorch step)")
    if block.kind == "gpu":
        assert block.output is None, f"{block}: the stand-in cupy computes nothing to print"
        driver = tmp_path / "stand_in.py"
        driver.write_text(STAND_IN, encoding="utf-8")
        res = _run([str(driver), str(example)], tmp_path)
        assert res.returncode == 0, f"{block}:\n{res.stderr}"
        compiled, launches = map(int, re.findall(r"compiled: (\d+), launches: (\d+)",
                                                 res.stderr)[-1])
        assert compiled > 0 and (launches > 0 or "warmup" in block.code), (
            f"{block}: {compiled} modules compiled, {launches} kernels launched")
        return
    assert "import cupy" not in block.code, f"{block}: mark a GPU example ({GPU}: ...)"
    res = _run([str(example)], tmp_path)
    assert res.returncode == 0, f"{block}:\n{res.stderr}"
    if block.output is not None:
        assert res.stdout == block.output, f"{block} prints:\n{res.stdout}"


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.page == p for b in PYTHON)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_each_page_shows_a_cpu_example_first(page):
    first = next(b for b in PYTHON if b.page == page)
    assert first.kind == "cpu", f"{first}: the page's first example should run on a CPU"


def _commands(block: Block) -> list[list[str]]:
    """The argument lists of the `onnx-cupy` commands in a shell block."""
    text = block.code.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        for part in re.split(r"&&|\|\||;|\|", line.split(" #")[0].removeprefix("$ ")):
            match = re.match(r"\s*(?:\w+=(?:\$\([^)]*\)|\S+)\s+)*(?:\S*/)?onnx-cupy(\s.*|$)",
                             part)
            if match:
                found.append(shlex.split(match.group(1)))
    return found


COMMANDS = [(b, argv) for b in SHELL for argv in _commands(b)]


def test_every_command_is_shown():
    """Each command of the command line appears in some page's shell block."""
    (commands,) = [a.choices for a in cli.parser()._actions if a.dest == "command"]
    assert {argv[0] for _, argv in COMMANDS if argv} == set(commands)


@pytest.mark.parametrize("block,argv", COMMANDS, ids=[f"{b}:{' '.join(a)}" for b, a in COMMANDS])
def test_shell_command_is_accepted(block, argv):
    try:
        cli.parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{block}: onnx-cupy {' '.join(argv)} is rejected ({exc})")


def test_installs_name_existing_extras():
    """`pip install ".[a,b]"` names extras that pyproject.toml defines; no page installs
    "onnx-cupy[...]" from a package index (it is not on one)."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        extras = set(tomllib.load(f)["project"]["optional-dependencies"])
    named = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install [^\n]*\bonnx-cupy\[", text), page
        for group in re.findall(r"""pip install (?:-e )?["']?[^"'\s]*\.\[([\w,]+)\]""", text):
            named |= set(group.split(","))
    assert named and named <= extras, named - extras


def _resolve(dotted: str) -> object:
    """The object a dotted name such as onnx_cupy.core.emulator.launch names."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attribute in parts[i:]:
            obj = getattr(obj, attribute)
        return obj
    raise ImportError(dotted)


NAMES = sorted({(name, page.relative_to(ROOT).as_posix()) for page in PAGES
                for name in re.findall(r"\b(onnx_cupy(?:\.\w+)+)", page.read_text("utf-8"))})


@pytest.mark.parametrize("name,page", NAMES, ids=[f"{p}:{n}" for n, p in NAMES])
def test_named_objects_exist(name, page):
    """Every onnx_cupy.x.y a page names is importable (modules move: the pages follow)."""
    assert _resolve(name) is not None
