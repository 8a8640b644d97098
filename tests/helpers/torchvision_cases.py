"""torchvision's results for onnx_cupy.ops (tests/data/torchvision/: cases.json and cases.npz,
see its README), read as data, and the configurations they were recorded on.

`python tests/helpers/torchvision_cases.py [folder]`, run where torch and torchvision are
installed (they alone: this module imports neither onnx_cupy nor pytest to record), records
`torchvision.ops.roi_align` and `roi_pool` on CPU for every configuration of `configurations()`
into the folder (default: tests/data/torchvision)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = Path(__file__).parents[1] / "data" / "torchvision"
SEED = 20261129
COUNT = 96   # configurations: even ones roi_align, odd ones roi_pool


def configurations() -> list[dict[str, Any]]:
    """Seeded calls: 1-3 images of 1-4 channels, 1-17 pixels a side, 0-7 boxes partly or wholly
    outside, zero-size and reversed ones, (K, 5) or per-image lists, float32 and float64,
    output sizes 1-5 (an int or a pair), spatial scales, sampling ratios -1, 0, 1, 2, 3, and
    both `aligned` values."""
    found = []
    for i in range(COUNT):
        rng = np.random.default_rng([SEED, i])
        n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        h, w = int(rng.integers(1, 18)), int(rng.integers(1, 18))
        size: Any = int(rng.integers(1, 6)) if rng.random() < 0.5 else [
            int(rng.integers(1, 6)), int(rng.integers(1, 6))]
        case: dict[str, Any] = {
            "id": i, "function": "roi_align" if i % 2 == 0 else "roi_pool",
            "dtype": str(rng.choice(["float32", "float64"])), "x_shape": [n, c, h, w],
            "boxes": int(rng.choice([0, 1, 2, 4, 7])), "as_list": bool(rng.random() < 0.4),
            "output_size": size,
            "spatial_scale": float(rng.choice([1.0, 0.5, 0.25, 2.0, 0.0625, 0.3]))}
        if case["function"] == "roi_align":
            case["sampling_ratio"] = int(rng.choice([-1, 0, 1, 2, 3]))
            case["aligned"] = bool(rng.random() < 0.5)
        found.append(case)
    return found


def inputs(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(x, rois (K, 5) with the image index first, sorted by it) of a configuration: boxes
    partly or wholly outside, reversed ones (not where `aligned` with adaptive sampling) and
    zero-size ones."""
    rng = np.random.default_rng([SEED, case["id"], 1])
    n, _, h, w = case["x_shape"]
    x = rng.uniform(-4, 4, case["x_shape"]).astype(case["dtype"])
    k = case["boxes"]
    corners = rng.uniform(-3, max(h, w) + 3, (k, 4)) / case["spatial_scale"]
    kind = rng.random(k)
    grow = kind < 0.6
    if case.get("aligned") and case["sampling_ratio"] <= 0:
        grow = kind < 0.9   # reversed: torchvision sizes a buffer by a negative grid and fails
    corners[grow, 2:] = np.maximum(corners[grow, 2:], corners[grow, :2])
    corners[kind >= 0.9, 2:] = corners[kind >= 0.9, :2]
    batch = np.sort(rng.integers(0, n, k))
    rois = np.concatenate([batch[:, None], corners], axis=1).astype(case["dtype"])
    return x, rois


def arguments(case: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(positional arguments after the input and boxes, keywords) of the call."""
    keywords: dict[str, Any] = {"spatial_scale": case["spatial_scale"]}
    if case["function"] == "roi_align":
        keywords.update(sampling_ratio=case["sampling_ratio"], aligned=case["aligned"])
    size = case["output_size"]
    return (size if isinstance(size, int) else tuple(size),), keywords


def boxes_of(case: dict[str, Any], rois: Any, split: Any) -> Any:
    """The boxes argument: `rois` itself, or per image (`split(rows)` makes one array of the
    rows of `rois` given, without the index column) for a case given as a list."""
    if not case["as_list"]:
        return rois
    index = np.asarray(rois[:, 0].tolist()) if len(rois) else np.zeros(0)
    return [split(np.flatnonzero(index == b)) for b in range(case["x_shape"][0])]


def load(folder: Path = FOLDER) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """(the listing, the arrays by name) of the recording, or None where it is absent."""
    if not (folder / "cases.json").exists():
        return None
    with np.load(folder / "cases.npz") as data:
        return json.loads((folder / "cases.json").read_text()), dict(data)


def record(folder: Path = FOLDER) -> None:
    """Run torchvision on every configuration and write cases.json and cases.npz."""
    import torch
    import torchvision
    from torchvision import ops

    stored: dict[str, np.ndarray] = {}
    listing = []
    for case in configurations():
        x, rois = inputs(case)
        t = torch.from_numpy(rois)
        boxes = boxes_of(case, t, lambda rows, t=t: t[torch.from_numpy(rows), 1:])
        args, keywords = arguments(case)
        y = getattr(ops, case["function"])(torch.from_numpy(x), boxes, *args, **keywords)
        name = f"case{case['id']}"
        stored[f"{name}_x"], stored[f"{name}_rois"], stored[f"{name}_y"] = x, rois, y.numpy()
        listing.append({**case, "y_shape": list(y.shape)})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.json").write_text(json.dumps(
        {"torch": torch.__version__, "torchvision": torchvision.__version__, "cases": listing},
        indent=1) + "\n")
    np.savez_compressed(folder / "cases.npz", **stored)


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER)
    print(f"recorded {COUNT} calls")
