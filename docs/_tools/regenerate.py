"""Regenerate the documentation's generated pages (docs/_generated/) with the commands that
measure them, one after another, from the repository root:

    python docs/_tools/regenerate.py                    # every page but the slow ones
    python docs/_tools/regenerate.py first_call_emulated kernels   # those pages only
    python docs/_tools/regenerate.py --all              # the benchmark and the suite too
    python docs/_tools/regenerate.py --list             # the pages and their commands

The tests check what a page lists against the code (operators, instantiations, figures that
do not depend on timing); timings are what the run measured. `onnx-cupy` and `python` are
taken from the interpreter running this script. A failing command stops the run.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = "onnx-cupy"

# page: (command, environment it needs, slow: left out unless named or --all)
PAGES: dict[str, tuple[str, dict[str, str], bool]] = {
    "first_call_nvrtc": (f"{CLI} warmup --dry-run --before --repeat 2 "
                         "--out docs/_generated/first_call_nvrtc.md", {}, False),
    "first_call_emulated": (f"{CLI} warmup --backend emulated --dtype float32 --jobs 1 --before "
                            "--repeat 2 --out docs/_generated/first_call_emulated.md",
                            {"ONNX_CUPY_CACHE": "<empty>"}, False),
    "kernels": (f"{CLI} kernels --markdown docs/_generated/kernels.md", {}, False),
    "check_kernels": (f"{CLI} check-kernels --markdown docs/_generated/check_kernels.md", {},
                      False),
    "differential": ("python -m helpers.differential_report", {"PYTHONPATH": "src:tests"},
                     False),
    # the benchmark's tables and chart from its committed figures (the measurement: below)
    "bench-numpy-text": (f"{CLI} bench --backend numpy --from-json benchmarks/results/numpy.json "
                         "--out benchmarks/results --markdown docs/_generated/bench-numpy.md",
                         {}, False),
    "bench-numpy": (f"{CLI} bench --backend numpy --repeat 3 --out benchmarks/results "
                    "--markdown docs/_generated/bench-numpy.md", {}, True),
    "suite": ("python docs/_tools/suite.py", {}, True),
}


def argv(command: str) -> list[str]:
    """The command's arguments, run by this interpreter."""
    words = shlex.split(command)
    if words[0] == CLI:
        return [sys.executable, "-m", "onnx_cupy", *words[1:]]
    return [sys.executable, *words[1:]]


def run(name: str) -> None:
    command, env, _ = PAGES[name]
    with tempfile.TemporaryDirectory() as empty:
        extra = {k: empty if v == "<empty>" else v for k, v in env.items()}
        if "PYTHONPATH" in extra:
            extra["PYTHONPATH"] = os.pathsep.join(str(ROOT / p)
                                                  for p in extra["PYTHONPATH"].split(":"))
        print(f"== {name}: {command}", flush=True)
        subprocess.run(argv(command), cwd=ROOT, env={**os.environ, **extra}, check=True)


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", metavar="page",
                        help="pages to regenerate (default: all but the slow ones): "
                             + ", ".join(PAGES))
    parser.add_argument("--all", action="store_true", help="the slow pages too")
    parser.add_argument("--list", action="store_true", help="list the pages and commands")
    opts = parser.parse_args(args)
    unknown = [p for p in opts.pages if p not in PAGES]
    if unknown:
        parser.error(f"no such page: {', '.join(unknown)} (pages: {', '.join(PAGES)})")
    if opts.list:
        for name, (command, env, slow) in PAGES.items():
            prefix = " ".join(f"{k}={v}" for k, v in env.items())
            print(f"{name}{' (slow)' if slow else ''}: {prefix + ' ' if prefix else ''}{command}")
        return 0
    chosen = opts.pages or [n for n, (_, _, slow) in PAGES.items() if opts.all or not slow]
    try:
        for name in chosen:
            run(name)
    except subprocess.CalledProcessError as exc:
        print(f"regenerate: {' '.join(exc.cmd)} exited with {exc.returncode}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
