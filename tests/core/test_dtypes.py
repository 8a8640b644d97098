"""The one checker of the families' per-version dtype tables: what a version takes, the TypeError
that lists it, and the opset that brought a later dtype."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from onnx_cupy.core import dtypes, opsets
from onnx_cupy.hardmax import plan as hardmax_plan
from onnx_cupy.pool import plan as pool_plan
from onnx_cupy.resize import plan as resize_plan
from onnx_cupy.unpool import plan as unpool_plan

TABLE = {**dtypes.since(1, *dtypes.FLOATS), **dtypes.since(12, "int8"),
         **dtypes.since(22, "bfloat16")}


@pytest.mark.parametrize("dtype, version, key", [
    (np.float16, 1, "float16"), (np.float64, 12, "float64"), (np.int8, 12, "int8"),
    (ml_dtypes.bfloat16, 22, "bfloat16")], ids=str)
def test_taken(dtype, version, key):
    assert dtypes.check("MaxPool", TABLE, dtype, version) == key


def test_a_later_dtype_names_the_opset_that_brought_it():
    with pytest.raises(TypeError, match=r"^MaxPool: input dtype bfloat16 requires opset >= 22 "
                                        r"\(it came with MaxPool-22\); MaxPool-12, in force at "
                                        r"opset 18, takes float16, float32, float64, int8$"):
        dtypes.check("MaxPool", TABLE, ml_dtypes.bfloat16, 12, 18)


def test_an_unknown_dtype_lists_what_the_version_takes():
    with pytest.raises(TypeError, match=r"^MaxPool: input dtype int16 is not supported; "
                                        r"MaxPool-8 takes float16, float32, float64$"):
        dtypes.check("MaxPool", TABLE, np.int16, 8)


def test_a_mode_table():
    with pytest.raises(TypeError, match=r"dtype <U2 is not supported in mode 'linear'; Resize-19 "
                                        r"takes .*uint64, bfloat16 in mode 'linear'$"):
        dtypes.check("Resize", resize_plan.DTYPES["linear"], np.dtype("<U2"), 19, mode="linear")


@pytest.mark.parametrize("kind", ["<U3", "S2", "O"])
def test_every_string_dtype_is_one_key(kind):
    assert dtypes.table_name(np.dtype(kind)) == dtypes.STRING
    assert dtypes.check("Resize", resize_plan.DTYPES["nearest"], np.dtype(kind), 10) == "string"


def test_the_tables_name_known_operators_versions_and_dtypes():
    """Every operator of a family has a table, every version in a table is one of the
    operator's versions (PyTorch's adaptive pooling, no ONNX operator: version 1), and every key
    a dtype (or STRING)."""
    tables = {**pool_plan.DTYPES, **hardmax_plan.DTYPES, "MaxUnpool": unpool_plan.DTYPES,
              **{f"Resize {m}": t for m, t in resize_plan.DTYPES.items()},
              **{f"Upsample {m}": t for m, t in resize_plan.UPSAMPLE_DTYPES.items()}}
    assert set(pool_plan.DTYPES) == {*pool_plan.OPS, *pool_plan.GLOBAL_OPS,
                                     *pool_plan.ADAPTIVE_OPS}
    assert set(resize_plan.DTYPES) == set(resize_plan.MODES[max(resize_plan.VERSIONS)])
    assert set(resize_plan.UPSAMPLE_DTYPES) == set(resize_plan.UPSAMPLE_MODES)
    for name, table in tables.items():
        versions = opsets.ATTRIBUTES.get(name.split()[0], (1,))
        assert all(v in versions for v in table.values()), name
        assert all(k == dtypes.STRING or np.dtype(ml_dtypes.bfloat16 if k == "bfloat16" else k)
                   for k in table), name
