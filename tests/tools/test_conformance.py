"""onnx-cupy conformance's loading of ONNX's node tests leaves the caller's NumPy global random
state as it was (ONNX's case generators reseed and draw from it)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, numpy as np
from onnx_cupy.tools import conformance
draws = []
for ops in (["Hardmax"], ["Resize", "MaxPool"]):   # the first load, then the loaded corpus
    np.random.seed(1234)
    expected = np.random.random(3).tolist()
    np.random.seed(1234)
    cases = conformance.node_cases(ops)
    draws.append([len(cases), np.random.random(3).tolist() == expected])
print(json.dumps(draws))
"""


def test_node_cases_keep_the_global_random_state():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [[7, True], [39 + 19, True]]
