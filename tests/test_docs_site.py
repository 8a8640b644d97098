"""The built documentation site: it builds with warnings as errors; the API page documents every
exported name with readable return types; no table or code block can be cut (each sits in a box
that scrolls sideways inside the content column, and the theme's column gives way on narrow
windows); the gallery shows its pictures with captions; the index page shows a picture and an
example. (The layout in a browser: docs/_tools/check_layout.py, with Chromium.)"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import onnx_cupy

pytest.importorskip("sphinx", reason="the documentation needs the docs extra")
pytest.importorskip("furo", reason="the documentation needs the docs extra")
bs4 = pytest.importorskip("bs4", reason="furo's dependency beautifulsoup4 reads the pages")

pytestmark = pytest.mark.slow   # one Sphinx build, gallery included: about 15 s

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API_MODULES = ["onnx_cupy", "onnx_cupy.nn.functional", "onnx_cupy.ops", "onnx_cupy.dask",
               "onnx_cupy.onnx_backend"]


def _exports_extension():
    spec = importlib.util.spec_from_file_location("public_names",
                                                  DOCS / "_ext" / "public_names.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(DOCS),
                          str(out)], capture_output=True, text=True, timeout=900, check=False,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert res.returncode == 0, res.stderr
    return out


def _page(site: Path, name: str):
    return bs4.BeautifulSoup((site / name).read_text(encoding="utf-8"), "html.parser")


def _api(site: Path):
    """The API reference's pages (api.html lists the per-family ones), as one document."""
    pages = sorted(site.glob("api*.html"))
    assert len(pages) > 1, pages
    return bs4.BeautifulSoup("".join(p.read_text(encoding="utf-8") for p in pages), "html.parser")


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.glob("*.html") if p.stem not in ("genindex", "search"))


def test_every_export_is_documented(site):
    api = _api(site)
    documented = {dt["id"] for dt in api.select("dt.sig[id]")}
    exports = _exports_extension()
    wanted = {f"{m}.{n}" for m in API_MODULES for n in exports.public_names(m)}
    assert {f"onnx_cupy.{n}" for n in onnx_cupy.__all__ if n != "__version__"} <= wanted
    assert {"onnx_cupy.warmup", "onnx_cupy.max_pool", "onnx_cupy.global_lp_pool",
            "onnx_cupy.nn.functional.max_pool2d", "onnx_cupy.dask.max_pool",
            "onnx_cupy.onnx_backend.prepare"} <= wanted
    assert wanted <= documented, sorted(wanted - documented)


def test_return_types_are_readable(site):
    """No bare type variable as a return type: the Returns section's words stand."""
    api = _api(site)
    for field in api.select("dl.field-list > dt"):
        if field.get_text(strip=True).startswith("Return"):
            text = field.find_next_sibling("dd").get_text(" ", strip=True)
            assert "ArrayT" not in text, text
    for sig in api.select("dl.py.function"):
        fields = [dt.get_text(strip=True) for dt in sig.select("dl.field-list > dt")]
        assert any(f.startswith("Return") for f in fields), sig.dt["id"]
    for sig in api.select("dl.py dt.sig"):   # NumPy arrays by the aliases' names
        assert "ndarray[tuple" not in sig.get_text("", strip=True), sig.get_text(" ", strip=True)
    def signatures(name: str) -> list[str]:   # of each overload, without spaces
        return [dt.get_text("", strip=True) for dt in
                api.find(id=name).find_parent("dl").find_all("dt", recursive=False)]

    assert any("→tuple[NumPyArray[ScalarT],Indices]" in s
               for s in signatures("onnx_cupy.max_pool")), signatures("onnx_cupy.max_pool")
    assert any("→tuple[Array,Array]" in s for s in signatures("onnx_cupy.dask.max_pool"))


def _css_rules(css: str) -> dict[str, str]:
    """selector -> declarations of a plain CSS file (media queries flattened)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}@]+)\{([^{}]*)\}", css):
        for selector in selectors.split(","):
            rules[" ".join(selector.split())] = rules.get(" ".join(selector.split()), "") + body
    return rules


def test_no_table_or_code_block_can_be_cut(site):
    rules = _css_rules((site / "_static" / "layout.css").read_text(encoding="utf-8"))
    for box in ("div.table-wrapper", "div.highlight", "article pre"):
        assert re.search(r"overflow-x:\s*auto", rules[box]), box
        assert re.search(r"max-width:\s*100%", rules[box]), box
    assert re.search(r"min-width:\s*0", rules[".content"])      # the column gives way
    assert re.search(r"overflow-wrap:\s*break-word", rules["article table.docutils td"])
    assert re.search(r"box-sizing:\s*border-box", rules["div.table-wrapper"])
    tables = code = 0
    for path in _pages(site):
        page = _page(site, path.name)
        assert page.select_one('link[href^="_static/layout.css"]'), path.name
        for table in page.select("article table"):
            assert table.find_parent("div", class_="table-wrapper"), path.name
            tables += 1
        for pre in page.select("article pre"):
            assert pre.find_parent("div", class_="highlight"), path.name
            code += 1
    assert tables > 30 and code > 30, (tables, code)


def test_every_image_is_there(site):
    for path in _pages(site):
        for img in _page(site, path.name).select("article img"):
            assert (site / img["src"]).is_file(), (path.name, img["src"])


def test_gallery_page(site):
    page = _page(site, "gallery.html")
    figures = page.select("article figure")
    assert len(figures) >= 12
    for figure in figures:
        img, caption = figure.find("img"), figure.find("figcaption")
        assert img["alt"] and len(caption.get_text(" ", strip=True).split()) >= 15
        image = site / img["src"]
        assert image.suffix == ".png" and image.stat().st_size <= 300_000, image
    assert "Grace Hopper" in page.get_text() and "public domain" in page.get_text()
    sections = page.select("article section section")
    titles = [s.find(["h2"]).get_text(strip=True).rstrip("#¶") for s in sections]
    for wanted in ("GridSample and AffineGrid: warping an image", "MaxUnpool: MaxPool undone"):
        assert wanted in titles, titles
    for section, title in zip(sections, titles):
        assert section.select("figure img"), title


def test_index_shows_a_picture_and_an_example(site):
    page = _page(site, "index.html")
    assert page.select_one("article figure img")
    assert page.select_one("article div.highlight-python pre")
    text = page.select_one("article").get_text(" ")
    for op in ("AveragePool", "LpPool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool",
               "GlobalLpPool", "Hardmax", "Resize", "MaxUnpool", "Upsample", "GridSample",
               "AffineGrid"):
        assert op in text


def test_newer_operators_have_their_tables(site):
    """The semantics page has a table for each newer operator (after its paragraph, in a box that
    scrolls), and the PyTorch page's mapping lists the newer functions."""
    article = _page(site, "semantics.html").select_one("article")
    for lead in ("Upsample.", "MaxUnpool.", "GridSample.", "AffineGrid.", "adaptive pooling"):
        (strong,) = [b for b in article.select("p > strong") if b.get_text().endswith(lead)]
        table = strong.parent.find_next_sibling()
        assert table.name == "div" and "table-wrapper" in table["class"], lead
        assert len(table.select("tbody tr")) >= 3, lead
    assert "grid_sample" in article.get_text() and "affine_grid" in article.get_text()
    pytorch = _page(site, "pytorch.html")
    first_cells = [row.find("td").get_text() for table in pytorch.select("article table")
                   for row in table.select("tbody tr")]
    for call in ("grid_sample(", "affine_grid(", "max_unpool{1,2,3}d(",
                 "adaptive_avg_pool{1,2,3}d(", "adaptive_max_pool{1,2,3}d(",
                 'interpolate(mode="area")'):
        assert any(call in cell for cell in first_cells), call


def test_api_reference_is_split_with_its_contents_in_view(site):
    """api.html lists the per-family pages in its text; each page opens with a list of links to
    the functions it documents, and none is a page of more than 25 of them."""
    index = _page(site, "api.html")
    listed = [a["href"] for a in index.select("article .toctree-wrapper a[href]")]
    pages = sorted(p.name for p in site.glob("api-*.html"))
    assert sorted(h.split("#")[0] for h in listed) == pages and len(pages) >= 6, (listed, pages)
    for name in pages:
        page = _page(site, name)
        documented = [dt["id"] for dt in page.select("article dl.py > dt.sig[id]")
                      if not dt.find_parent("dd")]   # not a class's members
        first = page.select_one("article ul")
        links = [a["href"].split("#")[-1] for a in first.select("a[href]")]
        assert documented and len(documented) <= 25, (name, len(documented))
        assert set(links) == set(documented), (name, links, documented)


def _layout_tool():
    spec = importlib.util.spec_from_file_location("check_layout",
                                                  DOCS / "_tools" / "check_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LAID_OUT = ["index.html", "benchmarks.html", "gallery.html", "api.html", "api-pooling.html",
            "usage.html"]


@pytest.fixture(scope="module")
def layout(site, tmp_path_factory):
    """What headless Chromium measures on the pages of LAID_OUT at a desktop's and a phone's
    width (docs/_tools/check_layout.py): (page, width) -> its report."""
    tool = _layout_tool()
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with tool.serve(site) as root:
        return {(page, width): tool.measure(site, root, page, width, str(profile))
                for page in LAID_OUT for width in tool.WIDTHS}


def test_nothing_is_cut_in_a_browser(layout):
    cut = [f"{page} at {width} px: {c}" for (page, width), r in layout.items() for c in r["cut"]]
    assert not cut, "\n".join(cut)


def test_results_tables_fit_a_desktop_window(layout):
    """At 1280 px every table of the benchmarks page fits the content column as it is, without
    scrolling sideways."""
    tables = layout["benchmarks.html", 1280]["tables"]
    assert len(tables) >= 2, tables
    wide = [t for t in tables if t["width"] > t["column"] + 1]
    assert not wide, wide


@pytest.mark.parametrize("width", [1280, 390])
def test_gallery_pictures_keep_their_native_size(layout, width):
    """A phone does not shrink the gallery's pictures (their labels, the zone plate's rings):
    each is shown at its own width, in a figure that scrolls sideways where it is wider."""
    images = layout["gallery.html", width]["images"]
    assert len(images) >= 12, images
    resized = [i for i in images if i["natural"] and i["shown"] != i["natural"]]
    assert not resized, resized
