"""The gallery: registered pictures with captions, drawn as small PNG files with the page that
shows them; a new picture is one decorated function."""
from __future__ import annotations

import contextlib
import io
import re
import struct
import sys
from pathlib import Path

import pytest

from onnx_cupy.tools import cli, gallery

pytest.importorskip("matplotlib", reason="the gallery draws with matplotlib (extra docs)")

MAX_BYTES = 300_000


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", header[16:24])


def test_pictures_are_registered_with_captions():
    names = [p.name for p in gallery.PICTURES]
    assert len(names) >= 12 and len(set(names)) == len(names), names
    for pic in gallery.PICTURES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", pic.name), pic.name
        assert len(pic.caption.split()) >= 15 and pic.caption.endswith("."), pic.name
    sections = {p.section for p in gallery.PICTURES}
    for wanted in ("Resize on a photograph", "Resize on a zone plate: aliasing",
                   "Pooling on an image", "Hardmax", gallery.WARPS, gallery.UNPOOL):
        assert wanted in sections
    assert {"grid-sample-warps", "grid-sample-padding", "grid-sample-modes", "max-unpool-image",
            "max-unpool-line"} <= set(names)


def test_every_section_shows_pictures():
    """Each heading of the page is followed by figures before the next one."""
    page = gallery.markdown(gallery.PICTURES)
    parts = re.split(r"^## (.+)$", page, flags=re.MULTILINE)[1:]
    headings, bodies = parts[0::2], parts[1::2]
    assert headings == list(dict.fromkeys(p.section for p in gallery.PICTURES))
    for heading, body in zip(headings, bodies):
        shown = re.findall(r"^```\{figure\} (\S+)\.png$", body, flags=re.MULTILINE)
        assert shown == [p.name for p in gallery.PICTURES if p.section == heading], heading


@pytest.mark.parametrize("name", ["grid-sample-warps", "grid-sample-padding",
                                  "grid-sample-modes", "max-unpool-image", "max-unpool-line",
                                  "roi-crops", "pool-training"])
def test_new_operator_pictures(tmp_path, name):
    """The GridSample, AffineGrid, MaxUnpool, RoiAlign and training pictures draw, at the
    page's width, small."""
    (png, _) = gallery.render(tmp_path, [name])
    width, height = _png_size(png)
    assert width == 800 and 80 <= height <= 480, (width, height)
    assert png.stat().st_size <= MAX_BYTES


def test_one_picture_and_its_page(tmp_path):
    paths = gallery.render(tmp_path, ["max-pool-dilations"])
    assert [p.name for p in paths] == ["max-pool-dilations.png", "gallery.md"]
    assert _png_size(paths[0])[0] == gallery.FIGURE_WIDTH * gallery.DPI
    page = paths[1].read_text()
    (pic,) = [p for p in gallery.PICTURES if p.name == "max-pool-dilations"]
    assert page.startswith(gallery.PHOTO_CREDIT)
    assert f"## {pic.section}\n" in page
    assert "```{figure} max-pool-dilations.png\n" in page and f"\n{pic.caption}\n```" in page


def test_a_new_picture_is_one_function(tmp_path, monkeypatch):
    monkeypatch.setattr(gallery, "PICTURES", list(gallery.PICTURES))

    @gallery.picture("Warps", """A test picture: one function, registered by its decorator,
    appears on the page under its section with its caption.""", height=1.0)
    def grid_warp(fig):
        fig.subplots().plot([0, 1], [1, 0])

    gallery.render(tmp_path, ["grid-warp"], images="/pictures/")
    page = (tmp_path / "gallery.md").read_text()
    assert "## Warps\n" in page and "```{figure} /pictures/grid-warp.png\n" in page
    assert _png_size(tmp_path / "grid-warp.png") == (800, 80)
    assert "grid-warp" in [p.name for p in gallery.PICTURES]


def test_unknown_picture(tmp_path):
    with pytest.raises(ValueError, match="gallery: no picture named nope; the pictures are "):
        gallery.render(tmp_path, ["nope"])


def test_command(tmp_path, capsys):
    assert cli.main(["gallery", "--out", str(tmp_path), "--picture", "resize-nearest-modes"]) == 0
    assert capsys.readouterr().out.startswith("wrote 1 pictures and their page")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gallery.md",
                                                          "resize-nearest-modes.png"]


def test_without_matplotlib(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert cli.main(["gallery", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "onnx-cupy gallery needs the optional dependency 'matplotlib" in err
    assert 'pip install ".[docs]"' in err and "sphinx" not in err


@pytest.mark.slow   # draws every picture: a few seconds
def test_every_picture_is_small(tmp_path):
    paths = gallery.render(tmp_path)
    pngs = [p for p in paths if p.suffix == ".png"]
    assert len(pngs) == len(gallery.PICTURES) >= 12   # the benchmark's results are in the clone
    for png in pngs:
        width, height = _png_size(png)
        assert width == 800 and 80 <= height <= 480, (png.name, width, height)
        assert png.stat().st_size <= MAX_BYTES, (png.name, png.stat().st_size)


def test_training_picture_is_the_gradients_page_example():
    """The training the gallery draws is the example of docs/gradients.md: run as pasted, the
    page's code gives the gallery's losses bit for bit, and prints what the page shows."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "gradients.md").read_text("utf-8")
    section = page.split("## Training a small model with vjp", 1)[1]
    code, shown = re.search(r"```python\n(.*?)```\n```text\n(.*?)```", section, re.DOTALL).groups()
    printed = io.StringIO()
    namespace: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "docs/gradients.md", "exec"), namespace)
    run = gallery.train_pooling_model()
    assert namespace["losses"] == run.losses and namespace["accuracy"] == run.accuracy
    assert (namespace["w1"] == run.filters).all()
    assert printed.getvalue() == shown
