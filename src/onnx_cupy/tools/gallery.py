"""The gallery: pictures of what the operators do, drawn with matplotlib from the operators' own
results (`onnx-cupy gallery --out DIR`; the documentation build draws them into the site).

A picture is one function registered with `@picture(section, caption)`: it draws on the
matplotlib Figure it is given, and the gallery page shows it under `section` with `caption`
(what to look at). Adding an operator's pictures is adding such functions.

The photograph is matplotlib's sample portrait of Grace Hopper (`grace_hopper.jpg`, shipped in
matplotlib's sample data; a U.S. Navy photograph, in the public domain).
"""
from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import onnx_cupy as oc

from ..core import extras
from .bench import cases as bench_cases

PHOTO_CREDIT = ("The photograph: Grace Hopper, a U.S. Navy photograph in the public domain "
                "(`grace_hopper.jpg`, shipped with matplotlib's sample data)")


def _benchmark_results() -> Path:
    """The committed benchmark results, benchmarks/results/numpy.json of a clone: beside the
    package where it runs from the clone's src/, else in the current directory (a clone whose
    package is installed into a virtual environment)."""
    found = [root / "benchmarks" / "results" / "numpy.json"
             for root in (Path(__file__).resolve().parents[3], Path.cwd())]
    return next((path for path in found if path.is_file()), found[0])


BENCHMARK = _benchmark_results()
DPI = 80
FIGURE_WIDTH = 10.0   # inches: 800 px at DPI, the width of the documentation's content column


@dataclasses.dataclass(frozen=True)
class Picture:
    """One picture of the gallery: `draw(figure)` fills a matplotlib Figure of `height` inches."""

    name: str
    section: str
    caption: str
    height: float
    draw: Callable[[Any], None]
    reads: Path | None = None   # a file of the source tree it draws from (absent: not drawn)


PICTURES: list[Picture] = []


def picture(section: str, caption: str, height: float = 3.2, reads: Path | None = None
            ) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register the decorated function as a picture named after it (`resize_modes` ->
    `resize-modes.png`), shown under `section` with `caption`; `reads`: a file it draws from."""
    def register(draw: Callable[[Any], None]) -> Callable[[Any], None]:
        PICTURES.append(Picture(draw.__name__.replace("_", "-"), section, " ".join(caption.split()),
                                height, draw, reads))
        return draw
    return register


def _matplotlib() -> Any:
    try:
        import matplotlib.figure
        from matplotlib import cbook
    except ImportError as exc:
        raise extras.missing("onnx-cupy gallery", "docs", exc, only="matplotlib") from exc
    return matplotlib.figure, cbook


def render(out: str | Path, names: Sequence[str] | None = None, images: str = "") -> list[Path]:
    """Draw the pictures (those named in `names`, else all whose input file is there: the
    benchmark's results are in a clone, not in the installed package) into `out` as PNG files,
    and write `out/gallery.md`, the page fragment that shows them with their captions, naming the
    images `<images><name>.png` (by default beside it); the paths written."""
    unknown = sorted(set(names or ()) - {p.name for p in PICTURES})
    if unknown:
        raise ValueError(f"gallery: no picture named {', '.join(unknown)}; the pictures are "
                         f"{', '.join(p.name for p in PICTURES)}")
    chosen = [p for p in PICTURES if p.name in names] if names is not None else \
        [p for p in PICTURES if p.reads is None or p.reads.exists()]
    figure_module, _ = _matplotlib()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for pic in chosen:
        fig = figure_module.Figure(figsize=(FIGURE_WIDTH, pic.height), dpi=DPI,
                                   layout="constrained")
        pic.draw(fig)
        path = folder / f"{pic.name}.png"
        fig.savefig(path, metadata={"Software": None}, pil_kwargs={"optimize": True})
        written.append(path)
    page = folder / "gallery.md"
    page.write_text(markdown(chosen, images), encoding="utf-8")
    return [*written, page]


def markdown(pictures: Sequence[Picture], images: str = "") -> str:
    """The gallery as MyST Markdown: the photograph's credit, a heading per section, each
    picture as a figure with its caption (its first sentence as the image's alternative text),
    the image named `<images><name>.png`."""
    lines = [f"{PHOTO_CREDIT}.", ""]
    for section in dict.fromkeys(p.section for p in pictures):
        lines += [f"## {section}", ""]
        for pic in (p for p in pictures if p.section == section):
            alt = pic.caption.split(". ")[0].rstrip(".")
            lines += [f"```{{figure}} {images}{pic.name}.png", f":alt: {alt}",
                      f":name: gallery-{pic.name}", "", pic.caption, "```", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the inputs

@functools.cache
def photo() -> np.ndarray:
    """The photograph as float32 (1, 3, H, W) in [0, 1]."""
    _, cbook = _matplotlib()
    from matplotlib import image

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        rgb = image.imread(f, format="jpg")
    pixels: np.ndarray = np.asarray(rgb, np.float32).transpose(2, 0, 1)[None] / 255
    return np.ascontiguousarray(pixels)


def gray() -> np.ndarray:
    """The photograph in luminance, (1, 1, H, W)."""
    weights = np.array([0.299, 0.587, 0.114], np.float32).reshape(1, 3, 1, 1)
    luminance: np.ndarray = (photo() * weights).sum(axis=1, keepdims=True)
    return luminance


def zone_plate(n: int = 256) -> np.ndarray:
    """A zone plate, (1, 1, n, n): cos(pi r^2 / n), its local frequency r / n cycles per pixel
    growing from 0 at the centre to 0.5 (the Nyquist limit) at the edges' midpoints."""
    r = np.arange(n, dtype=np.float64) - (n - 1) / 2
    radius2 = r[:, None] ** 2 + r[None, :] ** 2
    return (0.5 + 0.5 * np.cos(np.pi * radius2 / n)).astype(np.float32)[None, None]


def _show(ax: Any, x: np.ndarray, title: str) -> None:
    """An (1, C, H, W) image on `ax`, values clipped to [0, 1]; matplotlib filters it where the
    panel is smaller than the image, so the display adds no aliasing of its own."""
    img = np.clip(x[0].transpose(1, 2, 0), 0, 1)
    ax.imshow(img[..., 0] if img.shape[-1] == 1 else img, cmap="gray", vmin=0, vmax=1,
              interpolation="antialiased")
    ax.set_title(title, fontsize=10)
    ax.set_axis_off()


def _row(fig: Any, images: Sequence[tuple[np.ndarray, str]]) -> None:
    for ax, (x, title) in zip(fig.subplots(1, len(images)), images):
        _show(ax, x, title)


# ------------------------------------------------------------------------------ Resize

RESIZE_PHOTO = "Resize on a photograph"
RESIZE_ZONE = "Resize on a zone plate: aliasing"


@picture(RESIZE_PHOTO, """A 40 x 40 crop around an eye and the glasses enlarged 8 times. Nearest
repeats each pixel as a block; linear is smooth but softens edges; cubic (cubic_coeff_a = -0.75, the
default) keeps edges sharper, with a faint light or dark fringe beside strong edges: the
overshoot of its negative weights.""", height=3.6)
def resize_modes(fig: Any) -> None:
    crop = photo()[:, :, 165:205, 175:215]
    scales = np.array([1, 1, 8, 8], np.float32)
    _row(fig, [(oc.resize(crop, scales=scales, mode=m), m) for m in ("nearest", "linear", "cubic")])


@picture(RESIZE_PHOTO, """The photograph reduced to a fifth (scales 0.2), each result enlarged
back for display. Without antialias a linear or cubic downscale reads only the 2 or 4 input
pixels nearest to each output along an axis, so fine detail (hair, the stripes and braid of the
uniform) turns to grainy noise; antialias=1 stretches the filter over the 5 input pixels each
output covers, and the picture is a faithful smaller copy.""", height=3.3)
def resize_antialias(fig: Any) -> None:
    scales = np.array([1, 1, 0.2, 0.2], np.float32)
    _row(fig, [(oc.resize(photo(), scales=scales, mode=m, antialias=a),
                f"{m}{', antialias' if a else ''}")
               for m in ("linear", "cubic") for a in (0, 1)])


@picture(RESIZE_PHOTO, """Four samples (dots, at their pixel centres) enlarged to 16 with linear
interpolation under four coordinate_transformation_mode values, each output drawn at its own
pixel centre. half_pixel and pytorch_half_pixel (the same here) align the ends of the two
pixel grids: the outputs follow straight lines between the samples and stay flat beyond the
outer ones; align_corners puts the first and last outputs on the first and last samples;
asymmetric maps output i to input i / scale, which shifts the result towards the start by half
an input pixel less half an output pixel, and its last outputs repeat the last sample.""")
def resize_coordinates(fig: Any) -> None:
    ax = fig.subplots()
    samples = np.array([0.2, 1.0, 0.1, 0.7], np.float32)
    ax.plot(np.arange(4) + 0.5, samples, "ko", label="input samples", zorder=3)
    centres = (np.arange(16) + 0.5) / 4
    for m in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
        y = oc.resize(samples[None, None], sizes=np.array([1, 1, 16]), mode="linear",
                   coordinate_transformation_mode=m)[0, 0]
        ax.plot(centres, y, marker=".", label=m,
                linestyle="--" if m == "pytorch_half_pixel" else "-")
    ax.set_xlabel("position along the axis (input pixels)")
    ax.set_ylabel("value")
    ax.legend(fontsize=9, ncols=5, loc="upper center", bbox_to_anchor=(0.5, 1.18))


@picture(RESIZE_PHOTO, """Which input element each output takes in nearest mode when 10
elements become 16 with asymmetric coordinates (output i reads input i * 10 / 16), for each
nearest_mode. round_prefer_floor and round_prefer_ceil differ only where that coordinate falls
exactly halfway between two inputs (outputs 4 and 12, at 2.5 and 7.5); floor and ceil differ
wherever it is not a whole number.""")
def resize_nearest_modes(fig: Any) -> None:
    ax = fig.subplots()
    x = np.arange(10, dtype=np.float32)[None, None]
    for offset, m in enumerate(("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")):
        y = oc.resize(x, sizes=np.array([1, 1, 16]), mode="nearest", nearest_mode=m,
                   coordinate_transformation_mode="asymmetric")[0, 0]
        ax.step(np.arange(16), y + 0.08 * offset, where="mid", label=m)
    ax.set_xlabel("output index")
    ax.set_ylabel("input index taken")
    ax.legend(fontsize=9)


@picture(RESIZE_PHOTO, """The weights each mode gives to the input samples around an output:
the response to a single 1 among zeros, enlarged 16 times. Linear is a triangle; cubic has
negative lobes (deeper with cubic_coeff_a = -0.75, the default, than with -0.5, which PyTorch's
antialiased bicubic uses): those lobes make the fringes of the cubic enlargement.""")
def resize_weights(fig: Any) -> None:
    ax = fig.subplots()
    impulse = np.zeros((1, 1, 9), np.float32)
    impulse[..., 4] = 1
    sizes = np.array([1, 1, 144])
    position = (np.arange(144) + 0.5) / 16 - 0.5 - 4
    for mode, a in (("linear", -0.75), ("cubic", -0.75), ("cubic", -0.5)):
        y = oc.resize(impulse, sizes=sizes, mode=mode, cubic_coeff_a=a)[0, 0]
        ax.plot(position, y, label=mode if mode == "linear" else f"cubic, a = {a}")
    ax.axhline(0, color="gray", linewidth=0.5)
    ax.set_xlabel("distance from the input sample (input pixels)")
    ax.set_ylabel("weight")
    ax.legend(fontsize=9)


@picture(RESIZE_ZONE, """The zone plate that the next pictures resize: concentric rings whose
frequency grows from the centre outward, reaching the finest pattern a pixel grid can hold (one
cycle every 2 pixels) at the middle of each edge. Any ring pattern that appears elsewhere after
a resize is an artefact: aliasing.""", height=3.7)
def zone_plate_original(fig: Any) -> None:
    plate = zone_plate()[0, 0]
    width, height = (int(v * DPI) for v in fig.get_size_inches())
    fig.figimage(plate, (width - plate.shape[1]) // 2, 8, cmap="gray", vmin=0, vmax=1)
    fig.text(0.5, 1 - 10 / height, f"zone plate, {plate.shape[0]} x {plate.shape[1]}, one "
             "screen pixel per pixel", ha="center", va="top", fontsize=10)


@picture(RESIZE_ZONE, """The zone plate reduced to a quarter (scales 0.25). Nearest, linear and
cubic sample the rings too sparsely: away from the centre, false rings (moire) appear, centred
at the corners and edges. With antialias=1 the rings the 64 x 64 grid cannot hold fade to an
even gray, and only the centre rings remain: the correct result.""", height=2.2)
def zone_plate_downscale(fig: Any) -> None:
    scales = np.array([1, 1, 0.25, 0.25], np.float32)
    _row(fig, [(oc.resize(zone_plate(), scales=scales, mode=m, antialias=a),
                f"{m}{', antialias' if a else ''}")
               for m, a in (("nearest", 0), ("linear", 0), ("cubic", 0), ("linear", 1),
                            ("cubic", 1))])


@picture(RESIZE_ZONE, """A coarse zone plate (32 x 32) enlarged 8 times. Nearest gives stairs;
linear gives smooth rings with visible kinks along the pixel grid; cubic follows the rings
most closely. Upscaling needs no antialias: antialias only changes a downscale.""", height=3.6)
def zone_plate_upscale(fig: Any) -> None:
    scales = np.array([1, 1, 8, 8], np.float32)
    small = zone_plate(32)
    _row(fig, [(oc.resize(small, scales=scales, mode=m), m)
               for m in ("nearest", "linear", "cubic")])


# ------------------------------------------------------------------------------ pooling

POOLING = "Pooling on an image"


@picture(POOLING, """The photograph (in gray) pooled over 8 x 8 windows with stride 8. Average
is a plain box-filtered downscale; max keeps each window's brightest pixel, so light areas grow
and thin dark lines (the eyebrows, the glasses' frame) vanish. LpPool gives the window's p-norm,
shown divided by the window size to the power 1/p (the power mean): it lies between the average
(p = 1) and the maximum (p growing without bound), and moves toward the maximum slowly: on this
photograph p = 2 is hardly told from the average, and p = 8 is still nearer the average than
the maximum.""", height=3.3)
def pool_modes(fig: Any) -> None:
    x = gray()
    window: dict[str, Any] = {"kernel_shape": [8, 8], "strides": [8, 8]}
    _row(fig, [(oc.average_pool(x, **window), "AveragePool"), (oc.max_pool(x, **window), "MaxPool"),
               (oc.lp_pool(x, p=2, **window) / 64 ** (1 / 2), "LpPool, p = 2"),
               (oc.lp_pool(x, p=8, **window) / 64 ** (1 / 8), "LpPool, p = 8")])


@picture(POOLING, """AveragePool over 41 x 41 windows, stride 1, padded by 20 on every side so
that the output keeps the input's size (the input: the photograph in gray, brightened).
count_include_pad=0 divides each sum by the pixels inside the image: the borders stay as bright
as the picture; count_include_pad=1 divides by the whole window, counting the padding as zeros:
the borders darken.""", height=4.2)
def pool_padding(fig: Any) -> None:
    x = 0.4 + 0.6 * gray()
    window: dict[str, Any] = {"kernel_shape": [41, 41], "pads": [20, 20, 20, 20]}
    _row(fig, [(x, "input"),
               (oc.average_pool(x, count_include_pad=0, **window), "count_include_pad = 0"),
               (oc.average_pool(x, count_include_pad=1, **window), "count_include_pad = 1")])


@picture(POOLING, """MaxPool, 3 x 3 windows with stride 1 and SAME_UPPER padding, on single
bright dots. With dilations 1 each dot grows into a 3 x 3 square; with dilations 4 the window's
taps are 4 pixels apart, and each dot becomes a 3 x 3 lattice of dots: the shape of the dilated
window.""", height=3.6)
def max_pool_dilations(fig: Any) -> None:
    dots = np.zeros((1, 1, 48, 48), np.float32)
    dots[..., 12::24, 12::24] = 1
    _row(fig, [(dots, "input")] + [
        (oc.max_pool(dots, kernel_shape=[3, 3], auto_pad="SAME_UPPER", dilations=[d, d]),
         f"dilations = {d}") for d in (1, 4)])


@picture(POOLING, """The global pools reduce each channel of the photograph to one value: the
mean (GlobalAveragePool), the maximum (GlobalMaxPool) and the 2-norm (GlobalLpPool, shown
divided by the square root of the pixel count: the root mean square).""")
def global_pools(fig: Any) -> None:
    x = photo()
    values = {"GlobalAveragePool": oc.global_average_pool(x),
              "GlobalMaxPool": oc.global_max_pool(x),
              "GlobalLpPool / sqrt(H W)": oc.global_lp_pool(x, p=2) / np.sqrt(x[0, 0].size)}
    ax = fig.subplots()
    width = 0.8 / len(values)
    for i, (label, v) in enumerate(values.items()):
        ax.bar(np.arange(3) + (i - 1) * width, v.ravel(), width, label=label)
    ax.set_xticks(range(3), ["red", "green", "blue"])
    ax.set_ylabel("value (pixels in [0, 1])")
    ax.set_ylim(0, 1.25)
    ax.legend(fontsize=9, ncols=3, loc="upper center")


# ------------------------------------------------------------------------------ Hardmax

@picture("Hardmax", """Hardmax over the colour axis (axis=1 of the (1, 3, H, W) photograph): each
pixel becomes pure red, green or blue, whichever of its channels is largest (the first on a
tie). The portrait's blue background and shirt stay blue, the skin turns red.""", height=4.4)
def hardmax_channels(fig: Any) -> None:
    x = photo()
    _row(fig, [(x, "input"), (oc.hardmax(x, axis=1), "Hardmax, axis = 1")])


# ------------------------------------------------------------------------------ GridSample

WARPS = "GridSample and AffineGrid: warping an image"
TURN = 30      # degrees: the affine warp's rotation
SHRINK = 1.25  # the affine warp samples this much more of the input along each axis
WAVE = 0.06    # the non-rigid warp's largest shift, in normalized units (1: half the image)
REACH = 1.8    # the padding picture's grid spans [-REACH, REACH] along each axis
CROP, ZOOMED = 40, 320   # the zoomed crop: input pixels, output pixels along each axis
CROP_TURN = 20  # degrees: the zoomed crop's rotation


def _turn(degrees: float, scale: float, size: Sequence[int], centre: Sequence[float] = (0, 0)
          ) -> np.ndarray:
    """AffineGrid's theta, (1, 2, 3) float32, that rotates by `degrees` and scales by `scale`
    in pixels (not in normalized units, which stretch a non-square image) about `centre` (x, y,
    normalized): x_in = scale * (cos x - sin (H / W) y) + cx, y_in = scale * (sin (W / H) x +
    cos y) + cy, for an (N, C, H, W) `size`."""
    height, width = size[-2:]
    c, s = np.cos(np.radians(degrees)), np.sin(np.radians(degrees))
    return np.array([[[scale * c, -scale * s * height / width, centre[0]],
                      [scale * s * width / height, scale * c, centre[1]]]], np.float32)


def _warp_size(x: np.ndarray, height: int) -> list[int]:
    """The output size (N, C, height, width) that keeps x's aspect ratio."""
    return [*x.shape[:2], height, round(height * x.shape[3] / x.shape[2])]


@picture(WARPS, f"""GridSample (mode linear, padding_mode zeros) on the photograph with two grids.
Left, the input. Middle, the grid from AffineGrid for a rotation by {TURN} degrees and a scale
of {SHRINK}: each output pixel reads the input {SHRINK} times farther from the centre, so the
portrait appears turned anticlockwise and smaller, and the corners that fall outside the input
are black (zeros). Right, a smooth non-rigid warp: the identity grid plus sine waves of
amplitude {WAVE} (in units of half the image), which bend the face, the flag and the uniform
into waves; where the waves push the grid past the right edge, black bulges appear.""",
         height=3.4)
def grid_sample_warps(fig: Any) -> None:
    x = photo()
    size = _warp_size(x, 300)
    turned = oc.grid_sample(x, oc.affine_grid(_turn(TURN, SHRINK, size), size), mode="linear")
    grid = oc.affine_grid(_turn(0, 1, size), size)
    u, v = grid[..., 0].copy(), grid[..., 1].copy()
    grid[..., 0] += WAVE * np.sin(3 * np.pi * v)
    grid[..., 1] += WAVE * np.sin(3 * np.pi * u)
    _row(fig, [(x, "input"), (turned, f"AffineGrid: {TURN} degrees, scale {SHRINK}"),
               (oc.grid_sample(x, grid, mode="linear"), "non-rigid warp")])


@picture(WARPS, f"""A grid that reaches outside the input: AffineGrid's identity scaled by
{REACH}, so the grid spans [-{REACH}, {REACH}] and the photograph fills the middle of each
result, sampled with mode linear. padding_mode decides what the rest shows: zeros gives black;
border repeats the edge pixels, which stretch out as streaks; reflection mirrors the image at
its edges, so flipped copies surround it.""", height=3.4)
def grid_sample_padding(fig: Any) -> None:
    x = photo()
    size = _warp_size(x, 300)
    grid = oc.affine_grid(_turn(0, REACH, size), size)
    _row(fig, [(oc.grid_sample(x, grid, mode="linear", padding_mode=m), f"padding_mode = {m}")
               for m in ("zeros", "border", "reflection")])


@picture(WARPS, f"""A {CROP} x {CROP} pixel crop around an eye and the glasses' frame, turned by
{CROP_TURN} degrees and enlarged to {ZOOMED} x {ZOOMED} by one GridSample call (the grid from
AffineGrid), for each mode. Nearest takes the closest pixel: turned square blocks with jagged
edges; linear blends the 2 x 2 pixels around each position, smooth but soft; cubic reads 4 x 4
pixels (Keys weights, a = -0.75): sharper edges, with a faint fringe beside strong ones.""",
         height=3.6)
def grid_sample_modes(fig: Any) -> None:
    x = photo()
    height, width = x.shape[2:]
    centre = ((2 * 195 + 1) / width - 1, (2 * 185 + 1) / height - 1)   # pixel (195, 185)
    theta = _turn(CROP_TURN, 1, x.shape, centre)
    theta[0, 0, :2] *= CROP / width   # the output spans CROP input pixels along x
    theta[0, 1, :2] *= CROP / height  # and along y
    grid = oc.affine_grid(theta, [1, 3, ZOOMED, ZOOMED])
    _row(fig, [(oc.grid_sample(x, grid, mode=m), m) for m in ("nearest", "linear", "cubic")])


# ------------------------------------------------------------------------------ MaxUnpool

UNPOOL = "MaxUnpool: MaxPool undone"


@picture(UNPOOL, """MaxPool (4 x 4 windows, stride 4) of a 96 x 96 crop of the photograph in
gray, with return_indices, then MaxUnpool of its output and Indices with the same attributes.
The unpooled image has the input's size: each window's brightest pixel is back at the place it
came from, every other pixel is 0 (black). The last panel shows the input dimmed, with the
pixels MaxUnpool filled at full brightness: one in each 4 x 4 window, its lightest.""",
         height=2.7)
def max_unpool_image(fig: Any) -> None:
    x = gray()[:, :, 140:236, 150:246]
    window: dict[str, Any] = {"kernel_shape": [4, 4], "strides": [4, 4]}
    pooled, indices = oc.max_pool(x, return_indices=True, **window)
    unpooled = oc.max_unpool(pooled, indices, **window)
    _row(fig, [(x, "input"), (pooled, "MaxPool"), (unpooled, "MaxUnpool"),
               (np.where(unpooled != 0, x, 0.3 * x), "the maxima on the input")])


@picture(UNPOOL, """The same on a line: a signal of 48 samples (gray), MaxPool with windows of 6
(dotted lines between them) and stride 6, and MaxUnpool of the maxima with their Indices
(orange). Each maximum lands on the sample it came from, the highest of its window (a dot on a
stem); every other output is 0 (the small dots).""")
def max_unpool_line(fig: Any) -> None:
    rng = np.random.default_rng(3)
    signal = np.cumsum(rng.standard_normal(48)).astype(np.float32)
    signal -= signal.min() - 0.5
    x = signal[None, None]
    pooled, indices = oc.max_pool(x, kernel_shape=[6], strides=[6], return_indices=True)
    unpooled = oc.max_unpool(pooled, indices, kernel_shape=[6], strides=[6])[0, 0]
    ax = fig.subplots()
    ax.plot(signal, color="gray", marker=".", label="input")
    for edge in range(6, 48, 6):
        ax.axvline(edge - 0.5, color="gray", linestyle=":", linewidth=0.8)
    placed, rest = np.flatnonzero(unpooled), np.flatnonzero(unpooled == 0)
    ax.plot(rest, unpooled[rest], "C1.", markersize=4)
    ax.stem(placed, unpooled[placed], linefmt="C1-", markerfmt="C1o", basefmt=" ",
            label="MaxUnpool(MaxPool)")
    ax.set_xlabel("position")
    ax.set_ylabel("value")
    ax.legend(fontsize=9)


# ------------------------------------------------------------------------------ RoiAlign

ROI = "RoiAlign and MaxRoiPool: regions pooled"
_BOXES = {"eye": (185.0, 175.0, 255.0, 230.0), "face": (150.0, 120.0, 380.0, 340.0),
          "ribbons": (318.0, 480.0, 458.0, 530.0)}   # (x1, y1, x2, y2) in the photograph


@picture(ROI, """Three boxes on the photograph (left), and what the detection heads pool from
them: RoiAlign to 32 x 32 (half_pixel, 2 x 2 bilinear samples per bin) gives smooth crops
resampled to one size whatever the box's shape; MaxRoiPool to 8 x 8 takes the brightest pixel of
each bin between the rounded corners, blocky and bright. Both read the boxes as data: one call
pools every box.""", height=4.2)
def roi_crops(fig: Any) -> None:
    x = photo()
    boxes = np.array(list(_BOXES.values()), np.float32)
    batch = np.zeros(len(boxes), np.int64)
    aligned = oc.roi_align(x, boxes, batch, output_height=32, output_width=32,
                           sampling_ratio=2)
    pooled = oc.max_roi_pool(x, np.concatenate([batch[:, None], boxes], axis=1).astype(
        np.float32), pooled_shape=[8, 8])
    axes = fig.subplots(2, len(boxes) + 1)
    grid = axes[0, 0].get_gridspec()
    for ax in axes[:, 0]:
        ax.remove()
    whole = fig.add_subplot(grid[:, 0])
    _show(whole, x, "boxes")
    for n, (name, (x1, y1, x2, y2)) in enumerate(_BOXES.items()):
        whole.add_patch(_rectangle((x1, y1), x2 - x1, y2 - y1, color=f"C{n}"))
        _show(axes[0, n + 1], aligned[n:n + 1], f"RoiAlign: {name}")
        _show(axes[1, n + 1], pooled[n:n + 1], f"MaxRoiPool: {name}")


def _rectangle(corner: tuple[float, float], width: float, height: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(corner, width, height, fill=False, edgecolor=color, linewidth=2)


# ------------------------------------------------------------------------------ gradients

GRADIENTS = "Gradients: a small model trained with onnx_cupy.vjp"


@dataclasses.dataclass(frozen=True)
class Training:
    """What `train_pooling_model` gives: the loss of each step, the accuracy on 1000 new
    signals, the learned filters (FILTERS, WIDTH) and the patterns they were trained on."""

    losses: list[float]
    accuracy: float
    filters: np.ndarray
    patterns: np.ndarray


@functools.cache
def train_pooling_model() -> Training:
    """The gradients page's example (docs/gradients.md), statement for statement: filters, ReLU,
    MaxPool, GlobalAveragePool and a linear layer trained by gradient descent to tell a step up
    from a step down at a random place in a noisy signal, the pools' gradients from
    onnx_cupy.vjp (the NumPy path, a few seconds)."""
    rng = np.random.default_rng(0)
    LENGTH, WIDTH, FILTERS, STEPS, BATCH, RATE = 32, 4, 4, 400, 64, 2.0  # noqa: N806
    PATTERNS = np.array([[-1, -1, 1, 1], [1, 1, -1, -1]], np.float32)  # noqa: N806
    POOL: dict[str, Any] = {"kernel_shape": [4], "strides": [4]}  # noqa: N806

    def batch(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, 2, n)
        x = 0.4 * rng.standard_normal((n, 1, LENGTH)).astype(np.float32)
        for signal, label, at in zip(x, labels, rng.integers(0, LENGTH - WIDTH + 1, n)):
            signal[0, at:at + WIDTH] += PATTERNS[label]
        return x, labels

    def forward(x: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        windows = np.lib.stride_tricks.sliding_window_view(x[:, 0], WIDTH, axis=1)
        h = np.einsum("npk,fk->nfp", windows, w1) + b1[:, None]
        a = np.maximum(h, 0)
        m = oc.max_pool(a, **POOL)
        g = oc.global_average_pool(m)[:, :, 0]
        return g @ w2 + b2, (windows, h, a, m, g)

    w1 = 0.5 * rng.standard_normal((FILTERS, WIDTH)).astype(np.float32)
    b1 = np.zeros(FILTERS, np.float32)
    w2 = 0.5 * rng.standard_normal((FILTERS, 2)).astype(np.float32)
    b2 = np.zeros(2, np.float32)
    losses = []
    for _ in range(STEPS):
        x, labels = batch(BATCH)
        logits, (windows, h, a, m, g) = forward(x)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        losses.append(float(-np.log(p[np.arange(BATCH), labels]).mean()))
        dlogits = (p - np.eye(2, dtype=np.float32)[labels]) / BATCH
        (dm,) = oc.vjp(oc.global_average_pool, m, cotangent=(dlogits @ w2.T)[:, :, None])
        (da,) = oc.vjp(oc.max_pool, a, cotangent=dm, **POOL)
        dh = da * (h > 0)
        for weight, grad in ((w1, np.einsum("nfp,npk->fk", dh, windows)),
                             (b1, dh.sum(axis=(0, 2))), (w2, g.T @ dlogits),
                             (b2, dlogits.sum(axis=0))):
            weight -= RATE * grad
    x, labels = batch(1000)
    accuracy = float((forward(x)[0].argmax(axis=1) == labels).mean())
    return Training(losses, accuracy, w1.copy(), PATTERNS)


TRAINING_MEAN = 25   # steps per point of the loss curve's running mean


@picture(GRADIENTS, f"""A small model trained with onnx_cupy.vjp: its loss over the steps of
gradient descent. Filters, ReLU, MaxPool, GlobalAveragePool and a linear layer learn to tell a
step up from a step down placed at random in a noisy signal (the example of the gradients page,
on the NumPy path, batches of 64), the pools' gradients given by onnx_cupy.vjp. Light: each
step's cross-entropy; dark: its mean over {TRAINING_MEAN} steps; dashed: ln 2, a coin's guess.
The loss stays near the guess while the filters are random, then falls as filters come to match
the steps (right: the four learned filters in colour beside the step up, dotted, and the step
down, dashed); the legend gives the accuracy on 1000 new signals.""", height=3.2)
def pool_training(fig: Any) -> None:
    run = train_pooling_model()
    curve, filters = fig.subplots(1, 2, width_ratios=[3, 1])
    steps = np.arange(len(run.losses))
    curve.plot(steps, run.losses, color="C0", alpha=0.3, linewidth=0.8, label="each step")
    mean = np.convolve(run.losses, np.ones(TRAINING_MEAN) / TRAINING_MEAN, mode="valid")
    curve.plot(steps[TRAINING_MEAN - 1:], mean, color="C0", linewidth=2,
               label=f"mean of {TRAINING_MEAN} steps (accuracy {run.accuracy:.0%})")
    curve.axhline(np.log(2), color="gray", linestyle="--", linewidth=0.8, label="ln 2")
    curve.set_xlabel("step")
    curve.set_ylabel("cross-entropy")
    curve.legend(fontsize=9)
    taps = np.arange(run.filters.shape[1])
    for w in run.filters:
        filters.plot(taps, w, marker=".")
    for pattern, style in zip(run.patterns, (":", "--")):
        filters.plot(taps, pattern, color="black", linestyle=style, linewidth=1)
    filters.set_xticks(taps)
    filters.set_xlabel("tap")
    filters.set_title("learned filters; black: the steps", fontsize=10)


# ------------------------------------------------------------------------------ the benchmark

BENCH = "The benchmark (NumPy path, committed results)"


def _bench_rows(dtype: str, size: str | None = None) -> list[dict[str, Any]]:
    """The committed rows of `dtype` (at `size`, one of the benchmark's size classes)."""
    with open(BENCHMARK, encoding="utf-8") as f:
        return [r for r in json.load(f)["rows"] if r["dtype"] == dtype
                and (size is None or r.get("size", "canonical") == size)]


def _timed(row: dict[str, Any], peer: str) -> bool:
    """Whether the row has a timing of the peer (a peer that cannot run a case records "na")."""
    return "ratio" in row["peers"].get(peer, {})


def _throughput(fig: Any, dtype: str, size: str) -> None:
    """One size class: each case's throughput, ours and onnxruntime's, labelled with its case
    and input shape."""
    rows = [r for r in _bench_rows(dtype, size) if _timed(r, "onnxruntime")]
    ax = fig.subplots()
    y = np.arange(len(rows))
    for offset, (label, runs) in enumerate((
            ("onnx-cupy (NumPy path)", rows),
            ("onnxruntime (CPU, 1 thread)", [r["peers"]["onnxruntime"] for r in rows]))):
        mid = np.array([r["melem_s"] for r in runs])
        low, high = np.array([r.get("melem_s_range", [r["melem_s"]] * 2) for r in runs]).T
        ax.barh(y + (offset - 0.5) * 0.4, mid, 0.4, xerr=[mid - low, high - mid], label=label,
                capsize=2)
    ax.set_yticks(y, [f"{r['case']}  ({'x'.join(map(str, r['shape']))})" for r in rows],
                  fontsize=10)
    ax.invert_yaxis()
    ax.set_title(f"{dtype}, {SIZE_TITLES[size]}", fontsize=11, loc="left")
    ax.set_xlabel("million elements of X and Y per second (median, range over the runs)")
    ax.legend(fontsize=10, loc="lower right")


# the benchmark's size classes, as the charts' titles name them
SIZE_TITLES = {"canonical": "canonical shapes (a batch of 8 for the pools and Resize)",
               "batch 1": "batch 1", "tiny": "tiny inputs (1 x 3 x 8 x 8 for the pools)"}
CHART_HEIGHT = 0.26   # inches per case: 10-point labels one under the other
CHART_MARGIN = 1.0   # inches: the title, the axis label and its ticks
CHART_CASES = len(bench_cases.FORWARD)   # rows of a size class, at most: for the height


@picture(BENCH, """Throughput of each float32 case at its canonical shape (the input shape in
parentheses) on the NumPy path and in onnxruntime (1 thread), from
benchmarks/results/numpy.json: bars are medians over the runs, whiskers their range. Longer is
faster.""", height=CHART_MARGIN + CHART_HEIGHT * CHART_CASES, reads=BENCHMARK)
def bench_float32(fig: Any) -> None:
    _throughput(fig, "float32", "canonical")


@picture(BENCH, """The same at batch 1: less data per call, so a call's fixed costs weigh
more.""", height=CHART_MARGIN + CHART_HEIGHT * CHART_CASES, reads=BENCHMARK)
def bench_float32_batch1(fig: Any) -> None:
    _throughput(fig, "float32", "batch 1")


@picture(BENCH, """The same on tiny inputs, where a call's fixed costs (checks, looking up the
prepared call, allocating the output) are most of its time.""",
         height=CHART_MARGIN + CHART_HEIGHT * CHART_CASES, reads=BENCHMARK)
def bench_float32_tiny(fig: Any) -> None:
    _throughput(fig, "float32", "tiny")


@picture(BENCH, """float16 at the canonical shapes: onnxruntime runs its float32 kernels between
two casts, and NumPy's float16 conversions cost about as much, so the two are closer.""",
         height=CHART_MARGIN + CHART_HEIGHT * CHART_CASES, reads=BENCHMARK)
def bench_float16(fig: Any) -> None:
    _throughput(fig, "float16", "canonical")


@picture(BENCH, """The NumPy path's throughput over onnx.reference's (the executable
specification, timed on a reduced shape) for each float32 case, on a log scale: right of the
line at 1 the NumPy path is faster. The pools gain most: onnx.reference loops over the output
elements in Python.""", height=CHART_MARGIN + CHART_HEIGHT * CHART_CASES, reads=BENCHMARK)
def bench_reference(fig: Any) -> None:
    rows = [r for r in _bench_rows("float32") if _timed(r, "onnx.reference")]
    ax = fig.subplots()
    ax.barh(np.arange(len(rows)), [r["peers"]["onnx.reference"]["ratio"] for r in rows])
    ax.set_yticks(np.arange(len(rows)), [r["case"] for r in rows], fontsize=10)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xlabel("throughput over onnx.reference's (x)")
