"""Measure how long the test suite takes and write the figures the README and the testing page
quote: docs/_generated/suite.md (included by docs/testing.md) and the comment above the README's
test command.

    .venv/bin/python docs/_tools/suite.py            # from the repository root

runs, with the given interpreter (by default .venv/bin/python, else this one), the README's
pytest line twice, first with an empty emulated-kernel cache (ONNX_CUPY_CACHE in a fresh
folder: what a first run on a new machine costs) then with the kernels it compiled, and then
the slow tests as CI's own step runs them (`.ci/slow`: `-m slow` in two processes at once). A
failing run stops it and writes nothing. Run it on a machine at rest: the figures are
wall-clock times of one run each.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "_generated" / "suite.md"
README = ROOT / "README.md"
COMMAND = "python docs/_tools/suite.py"
PYTEST = ("-m", "pytest", "-q")   # the README's line, after .venv/bin/python

# run name: (what it is, the interpreter's arguments, empty cache)
RUNS = {"cold": ("the README's command, empty kernel cache", PYTEST, True),
        "warm": ("the README's command, kernels compiled", PYTEST, False),
        "slow": ("the slow tests (CI's step after it: -m slow, two processes at once)",
                 (".ci/slow",), False)}


class Run(NamedTuple):
    name: str
    outcome: str    # pytest's summary: "12,000 passed, 30 skipped, 900 deselected"
    seconds: float


def minutes(seconds: float) -> int:
    """The figure "about N minutes" gives (at least 1)."""
    return max(1, round(seconds / 60))


def duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def measure(python: str, name: str) -> Run:
    _, args, empty = RUNS[name]
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if empty:
            env["ONNX_CUPY_CACHE"] = cache
        start = time.monotonic()
        extra = ("-p", "no:cacheprovider") if args == PYTEST else ()
        res = subprocess.run([python, *args, *extra], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=False)
        seconds = time.monotonic() - start
    last = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""
    if res.returncode != 0:
        sys.exit(f"{name}: the run exited with {res.returncode}: {last}\n{res.stderr[-2000:]}")
    outcome = re.sub(r"\s+in [\d.]+s.*$", "", last.strip("= "))
    outcome = re.sub(r"\d+", lambda m: f"{int(m.group()):,}", outcome)
    return Run(name, outcome, seconds)


def page(runs: list[Run]) -> str:
    """The generated page: the run's machine, then each run's command, outcome and duration."""
    if not runs:
        return (f"<!-- written by `{COMMAND}`: do not edit -->\n"
                f"Not measured yet on this revision: `{COMMAND}` measures it.\n")
    lines = [f"<!-- written by `{COMMAND}`: do not edit -->",
             f"- run: {datetime.date.today().isoformat()} on {platform.machine()} "
             f"({os.cpu_count()} CPUs), Python {platform.python_version()}", "",
             "| run | command | tests | duration |", "|---|---|---|---|"]
    for run in runs:
        what, args, _ = RUNS[run.name]
        command = " ".join([".venv/bin/python", *args])
        lines.append(f"| {what} | `{command}` | {run.outcome} | {duration(run.seconds)} |")
    return "\n".join(lines) + "\n"


def read(text: str) -> dict[str, float]:
    """The seconds of each run a written page gives, by run name."""
    found = {}
    for name, (what, _, _) in RUNS.items():
        row = re.search(rf"^\| {re.escape(what)} \|.*\| (?:(\d+) min )?(\d+) s \|$", text,
                        re.MULTILINE)
        if row:
            found[name] = 60 * int(row.group(1) or 0) + int(row.group(2))
    return found


def readme_comment(seconds: dict[str, float], cpus: int | None) -> list[str]:
    """The comment above the README's test command, with the measured figures."""
    if set(seconds) == set(RUNS):
        figures = (f"about {minutes(seconds['cold'])} minutes on {cpus} cores from an empty "
                   f"kernel cache, about {minutes(seconds['warm'])} with the kernels compiled; "
                   f"CI then runs the slow ones with -m slow in two processes (.ci/slow), about "
                   f"{minutes(seconds['slow'])} minutes")
    else:
        figures = f"not measured yet ({COMMAND} measures it); CI then runs the slow ones " \
                  "with -m slow in two processes (.ci/slow)"
    text = ("tests: install with the test extra and run the suite (no GPU needed; slow tests "
            f"left out): {figures}; the testing page says more")
    lines, line = [], "#"
    for word in text.split():
        if len(line) + 1 + len(word) > 96:
            lines.append(line)
            line = "#"
        line += " " + word
    return [*lines, line]


def cpus_of(text: str) -> int | None:
    found = re.search(r"\((\d+) CPUs\)", text)
    return int(found.group(1)) if found else None


def rewrite_readme(readme: str, comment: list[str]) -> str:
    """`readme` with the comment lines above its test command replaced by `comment`."""
    lines = readme.split("\n")
    at = next(i for i, line in enumerate(lines) if '".[test]"' in line)
    start = at
    while lines[start - 1].startswith("#"):
        start -= 1
    while not lines[start].startswith("# tests:"):
        start += 1
    return "\n".join(lines[:start] + comment + lines[at:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    venv = ROOT / ".venv" / "bin" / "python"
    parser.add_argument("--python", default=str(venv) if venv.exists() else sys.executable,
                        help="the interpreter whose environment runs the suite")
    args = parser.parse_args(argv)
    runs = []
    for name in RUNS:
        print(f"{name}: {RUNS[name][0]} ...", flush=True)
        runs.append(measure(args.python, name))
        print(f"  {runs[-1].outcome} in {duration(runs[-1].seconds)}", flush=True)
    text = page(runs)
    PAGE.write_text(text, encoding="utf-8")
    README.write_text(rewrite_readme(README.read_text(encoding="utf-8"),
                                     readme_comment(read(text), cpus_of(text))),
                      encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)} and the comment in README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
