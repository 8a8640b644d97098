"""What a differential test keeps of one configuration: the checks it reached and the failures
among them, as text (no result arrays), so that a cache can hold thousands. A family's
`evaluate(index)` fills a `Record` once per configuration (functools.cache); the per-configuration
test asserts that it has no failures and the coverage tests count what all of them reached.
`parameters` makes the configurations test parameters, all but a quick share of them marked
`slow` (for the differential tests: the configurations that also run the emulated kernels)."""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest


@dataclass
class Record:
    """One configuration's evaluation. `reached` counts checks and events by name; `failures`
    holds, per failed check, what was seen; `tolerated` the failures of checks a family allows to
    fail rarely (counted against a budget by a coverage test, listed here so they show)."""

    where: Any  # the configuration, formatted only in a report
    reached: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: dict[str, str] = field(default_factory=dict)
    tolerated: dict[str, str] = field(default_factory=dict)

    def count(self, name: str) -> None:
        self.reached[name] += 1

    def check(self, name: str, passed: bool, detail: str = "", tolerate: bool = False) -> bool:
        """Count `name` as reached and, unless `passed`, record `detail` as its failure (or as a
        tolerated one). Returns `passed`."""
        self.count(name)
        if not passed:
            (self.tolerated if tolerate else self.failures)[name] = detail
        return passed

    def check_raises_nothing(self, name: str, fn: Callable[..., object], *args: Any) -> bool:
        """`check` that calling `fn(*args)` raises no AssertionError (its message is the detail)."""
        try:
            fn(*args)
        except AssertionError as exc:
            return self.check(name, False, str(exc).strip())
        return self.check(name, True)

    def assert_passed(self, tolerated: bool = False) -> None:
        """Every check passed (and none failed within its tolerance, unless `tolerated`)."""
        assert not self.failures, self.report()
        assert tolerated or not self.tolerated, self.report()

    def report(self) -> str:
        lines = [str(self.where)]
        lines += [f"  {name}: {detail}" for name, detail in self.failures.items()]
        lines += [f"  {name} (tolerated): {detail}" for name, detail in self.tolerated.items()]
        return "\n".join(lines)


def totals(records: Iterable[Record]) -> collections.Counter[str]:
    """How many configurations reached each check or event, and `failed:<check>` /
    `tolerated:<check>` how many failed it."""
    counts: collections.Counter[str] = collections.Counter()
    for r in records:
        counts.update(r.reached)
        counts.update(f"failed:{name}" for name in r.failures)
        counts.update(f"tolerated:{name}" for name in r.tolerated)
    return counts


def parameters(configs: Sequence[Any], name: Callable[[Any], str],
               quick: Callable[[Any], bool]) -> list[Any]:
    """pytest parameters of `configs`, with the ids `name` gives; those not `quick` marked slow."""
    return [pytest.param(c, id=name(c), marks=() if quick(c) else pytest.mark.slow)
            for c in configs]


class Listed(NamedTuple):
    """A listed case: a kind of configuration where a runtime gives another result than the
    side onnx-cupy follows. `applies` tells it from the configuration alone; `follows` names
    onnx-cupy's side: 'ort', 'ref', or 'exact' (neither runtime: the oracle, the exact formula);
    `why` says why (the semantics page's reason)."""

    name: str
    applies: Callable[[Any], bool]
    follows: str
    why: str


def listed_seen(counts: collections.Counter[str]) -> set[str]:
    """The names of the listed cases that applied to some configuration (its `listed:<name>`
    events)."""
    return {k.removeprefix("listed:") for k in counts if k.startswith("listed:")}
