"""`onnx-cupy check-kernels`: every family's randomized configurations (the test suite's,
tests/cases/ of a clone: they are not installed with the package) run on the emulated path
under the checker (onnx_cupy.core.checker), which checks each global and shared access and
each barrier of the kernels the package loads.

Each configuration runs twice: on the grid the host computes, and with every grid-stride axis
narrowed to STRIDE_BLOCKS block(s), so that one block serves several planes, rows or outputs and
races between the loop's iterations show. A configuration the host rejects (a ValueError, as
the differential tests expect for some) launches nothing. The report counts, per operator, the
configurations, launches, checked accesses and errors; its last line reads
`checked: L launches, A accesses, E errors`."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import importlib
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .. import __version__
from ..core import checker, emulator, execution
from ..core.records import Instantiation

STRIDE_BLOCKS = 1   # blocks along each grid-stride axis in the narrowed runs
MISSING = ("check-kernels runs the test suite's configurations, tests/cases/ in a clone of "
           "onnx-cupy (the package does not install them): run it from the clone's root")


class Case(Protocol):
    """One configuration of the catalogue (tests/cases/common.py's Case)."""

    op: str
    name: str
    quick: bool

    def run(self) -> Any: ...


def catalogue(root: Path | None = None) -> ModuleType:
    """The configurations' package, `cases` of the test suite: importable as it is where the
    tests run, else found in `root`/tests (default: the current directory, a clone's root).
    A ModuleNotFoundError says where it looked."""
    found = sys.modules.get("cases")
    if found is None:
        tests = (root or Path.cwd()) / "tests"
        if (tests / "cases" / "__init__.py").is_file() and str(tests) not in sys.path:
            sys.path.insert(0, str(tests))
        try:
            found = importlib.import_module("cases")
        except ModuleNotFoundError as exc:
            if exc.name != "cases":   # the catalogue's own dependency (ml_dtypes)
                raise
            raise ModuleNotFoundError(MISSING, name="cases") from None
    if not callable(getattr(found, "operators", None)):
        raise ModuleNotFoundError(f"{MISSING} (another module named cases was found: "
                                  f"{found.__file__})", name="cases")
    return found


@dataclasses.dataclass
class Tally:
    """One operator's figures."""

    configurations: int = 0
    rejected: int = 0       # the host rejected the configuration: no launch
    launches: int = 0
    narrowed: int = 0       # launches of them with the grid-stride axes narrowed
    accesses: int = 0
    errors: int = 0


@dataclasses.dataclass
class Result:
    """What a run found: the tallies per operator, the errors (case name, message) and the
    seconds it took."""

    tallies: dict[str, Tally]
    errors: list[tuple[str, str]]
    seconds: float
    quick: bool
    instantiations: int    # kernel instantiations launched

    def total(self) -> Tally:
        t = Tally()
        for v in self.tallies.values():
            for f in dataclasses.fields(Tally):
                setattr(t, f.name, getattr(t, f.name) + getattr(v, f.name))
        return t

    def last_line(self) -> str:
        t = self.total()
        return f"checked: {t.launches} launches, {t.accesses} accesses, {t.errors} errors"


def compile_checked(selected: list[Case], jobs: int | None = None
                    ) -> set[Instantiation]:
    """Build (or load from the cache) the checked library of every instantiation the cases
    launch, `jobs` at a time (default: the CPU count): found by running their host code with
    launches recorded, not run. Returns their records."""
    with execution.backend("emulated"), checker.checking(record_only=True) as session:
        for case in selected:
            try:
                case.run()
            except ValueError:
                pass
    emulator.shim_header(wait=True, checked=True)
    with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        list(pool.map(lambda k: emulator.library(k, checked=True), sorted(
            session.instantiations, key=lambda k: (k.family, k.expression))))
    return session.instantiations


def run(ops: Iterable[str] | None = None, quick: bool = False,
        step: Callable[[str], None] | None = None,
        report: Callable[[str], None] | None = None, jobs: int | None = None) -> Result:
    """Run the cases of `ops` (every operator's by default; the representative subset if
    `quick`) under the checker, their checked libraries built first, `jobs` at a time;
    `step(name)` before each case, `report(line)` for each error."""
    selected: list[Case] = catalogue().cases(ops, quick)
    tallies: dict[str, Tally] = {}
    errors: list[tuple[str, str]] = []
    start = time.perf_counter()
    instantiations = compile_checked(selected, jobs)
    for case in selected:
        if step is not None:
            step(f"{case.op} {case.name}")
        tally = tallies.setdefault(case.op, Tally())
        tally.configurations += 1
        for stride_blocks in (None, STRIDE_BLOCKS):
            with execution.backend("emulated"), checker.checking(stride_blocks) as session:
                try:
                    case.run()
                except ValueError:
                    tally.rejected += stride_blocks is None
                except Exception as exc:  # noqa: BLE001 (each error is reported, the run goes on)
                    tally.errors += 1
                    narrowed = "" if stride_blocks is None else " (grid-stride axes narrowed)"
                    errors.append((f"{case.op} {case.name}{narrowed}", f"{exc}"))
                    if report is not None:
                        report(f"{case.op} {case.name}{narrowed}: {type(exc).__name__}: {exc}")
            tally.launches += session.launches
            tally.accesses += session.accesses
            tally.narrowed += session.launches if stride_blocks is not None else 0
    return Result(dict(sorted(tallies.items())), errors, time.perf_counter() - start, quick,
                  len(instantiations))


COLUMNS = ("operator", "configurations", "rejected", "launches", "of them narrowed",
           "accesses", "errors")


def _rows(result: Result) -> list[tuple[str, ...]]:
    rows = [(op, *(f"{getattr(t, f.name):,}" for f in dataclasses.fields(Tally)))
            for op, t in result.tallies.items()]
    total = result.total()
    return [*rows, ("all", *(f"{getattr(total, f.name):,}" for f in dataclasses.fields(Tally)))]


def table(result: Result) -> str:
    """The figures as a plain-text table."""
    rows = [COLUMNS, *_rows(result)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))) for r in rows)


def versions() -> str:
    """The versions the figures depend on (the compiler decides which accesses remain to
    check), as the generated page's `- versions:` line."""
    return (f"- versions: onnx-cupy {__version__}, {emulator.compiler_version()}, NumPy "
            f"{_numpy()}, Python {platform.python_version()}")


def markdown(result: Result, command: str) -> str:
    """The figures as the documentation includes them (docs/_generated/check_kernels.md):
    lines starting with '- ' describe the run, the rest is what the configurations give."""
    t = result.total()
    run = (f"- run: {result.seconds:.0f} s on {platform.machine()} ({os.cpu_count()} CPUs), "
           f"{date.today().isoformat()}")
    what = (f"{'The quick subset of the' if result.quick else 'All'} configurations of every "
            f"family, each run on the host's grid and again with its grid-stride axes narrowed "
            f"to {STRIDE_BLOCKS} block: {t.configurations:,} configurations, "
            f"{result.instantiations} kernel instantiations.")
    lines = [f"<!-- written by `{command}`: do not edit -->", run, versions(), "", what, "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(result)]
    lines += ["", f"`{result.last_line()}`"]
    lines += [f"\n**Error** in {name}: {message}" for name, message in result.errors]
    return "\n".join(lines) + "\n"


def _numpy() -> str:
    import numpy

    return str(numpy.__version__)
