"""Kernel instantiations as typed records.

A family registers each template instantiation of its `kernels/<family>.cu` as an
`Instantiation`: the template's name, its template arguments by role (each with the value the
host reads and its C++ spelling), the operators and input dtypes whose calls may launch it, the
grid axes it walks in grid-stride loops, and, for a fast path, the outputs one thread writes per
loop iteration and the instructions per output it is held to. The name expression a compiler gets,

    template<arg_1.cxx, ..., arg_k.cxx>,

is derived from these fields here and nowhere else; the launcher, the warm-up, the kernel report
and the tests read fields, never the expression.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Hashable
from typing import cast

from . import dtypes

# the fast paths with these storage dtypes are held to the kernel report's static targets
HELD_DTYPES = ("float16", "bfloat16", "float32")
WIDE_INDEX_BUDGET = 1.5   # a fast path with 64-bit offsets may spend this times its budget


@dataclasses.dataclass(frozen=True)
class Argument:
    """One template argument: its role (`name`, e.g. "storage", "index", "rank"), the value the
    host reads (a dtype name or element size, a bit width, a count, an enum member's name) and its
    C++ spelling."""

    name: str
    value: Hashable
    cxx: str


def argument(name: str, value: Hashable, cxx: str | None = None) -> Argument:
    """An argument spelled `cxx` in C++ (default: str(value), for counts)."""
    return Argument(name, value, str(value) if cxx is None else cxx)


def storage(dtype_name: str) -> Argument:
    """The storage type of elements of `dtype_name` (float16 -> oc::half_t, int8 -> signed
    char, ...)."""
    return Argument("storage", dtype_name, dtypes.storage_type(dtype_name))


def pod(itemsize: int) -> Argument:
    """Elements of `itemsize` bytes moved as raw words (rsz::pod<itemsize>): the storage of every
    dtype of that size."""
    return Argument("storage", itemsize, f"rsz::pod<{itemsize}>")


def index(bits: int) -> Argument:
    """The offset type: int (32 bits) or long long (64)."""
    return Argument("index", bits, dtypes.INDEX_TYPES[bits])


@dataclasses.dataclass(frozen=True, eq=False)   # one object per instantiation: hashed by identity
class Instantiation:
    """One registered template instantiation of kernels/<family>.cu (see the module docstring).

    `budget`: instructions per output the fast path is held to (None: reported, not budgeted);
    `cooperative`: its blocks synchronize (barriers, shared memory, warp collectives), so the
    emulator runs their threads as cooperating contexts; `grid_stride`: the grid axes (some of
    "xyz") it walks in a grid-stride loop, so that any number of blocks along them covers the work
    (the kernel checker narrows them); `threads`: most threads per block of its launches; `variant`:
    what it is specialized for besides storage and offsets (the kernel report's summary row),
    `rank`: the rank a generic kernel is instantiated for."""

    family: str
    template: str
    arguments: tuple[Argument, ...]
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    outputs: int = 1
    fast: bool = False
    budget: float | None = None
    cooperative: bool = False
    grid_stride: str = ""
    threads: int | None = None   # None: the loader's BLOCK
    variant: str = ""
    rank: int | None = None

    @functools.cached_property
    def expression(self) -> str:
        """The name expression: template<arguments' C++ spellings>."""
        return f"{self.template}<{', '.join(a.cxx for a in self.arguments)}>"

    def __getitem__(self, name: str) -> Hashable:
        """The value of the template argument `name`."""
        for a in self.arguments:
            if a.name == name:
                return a.value
        raise KeyError(f"{self.template} has no template argument {name!r}")

    @property
    def index_bits(self) -> int:
        """32 or 64: the width of its offsets."""
        return cast(int, self["index"])

    @property
    def held(self) -> bool:
        """A fast path held to the kernel report's static targets: one whose storage holds
        float16, bfloat16 or float32 elements."""
        return self.fast and any(d in HELD_DTYPES for d in self.dtypes)

    def __repr__(self) -> str:
        return f"Instantiation({self.family}: {self.expression})"


def fast_budget(family_budget: float, bits: int) -> float:
    """A fast path's budget of instructions per output: the family's, WIDE_INDEX_BUDGET times it
    with 64-bit offsets."""
    return family_budget * (WIDE_INDEX_BUDGET if bits == 64 else 1)

