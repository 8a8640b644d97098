"""Render every page of a built site in headless Chromium at a desktop and a phone width, save a
screenshot of each for a person to look at, and measure in the browser whether any table, code
block or image is cut: wider than the content column without a scrollable box of its own, or
making the page itself scroll sideways.

    python -m sphinx -W -b html docs /tmp/html
    python docs/_tools/check_layout.py /tmp/html --shots /tmp/shots

Needs Chromium (Debian: apt-get install -y chromium); exits 1 and lists what is cut, if anything.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WIDTHS = (1280, 390)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")
MAX_HEIGHT = 16000   # px: screenshots of longer pages stop there

# The probe page: it loads a page of the site in an iframe `width` px wide (headless Chromium's
# window is at least 500 px wide) and measures there, for each table, pre and img of the
# article, whether it reaches past the article's right edge outside any box that scrolls
# sideways ("cut"), or sits in such a box that does scroll ("scrolls": reachable, but not at a
# glance); and whether the page itself scrolls sideways. It also gives each table's width against
# the column's, and each image's width as shown against its own (natural) width.
PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="page" src="{page}" style="width:{width}px;height:900px;border:0"></iframe>
<script>
document.getElementById("page").addEventListener("load", event => {{
  const doc = event.target.contentDocument, win = event.target.contentWindow;
  const article = doc.querySelector("article") || doc.body;
  const edge = Math.min(article.getBoundingClientRect().right, win.innerWidth) + 1;
  const box = el => {{
    for (let a = el; a && a !== article; a = a.parentElement) {{
      const s = win.getComputedStyle(a).overflowX;
      if (s === "auto" || s === "scroll" || s === "hidden") return a;
    }}
    return null;
  }};
  const cut = [], scrolls = [];
  for (const el of article.querySelectorAll("table, pre, img")) {{
    const r = el.getBoundingClientRect(), b = box(el);
    const where = `${{el.tagName.toLowerCase()}} at y=${{Math.round(r.top + win.scrollY)}}`;
    if (r.width === 0) continue;
    if (b === null ? r.right > edge : b.getBoundingClientRect().right > edge ||
        win.getComputedStyle(b).overflowX === "hidden" && b.scrollWidth > b.clientWidth + 1)
      cut.push(`${{where}}: reaches ${{Math.round(r.right)}} px, ` +
               `the column ends at ${{Math.round(edge)}}`);
    else if (b !== null && b.scrollWidth > b.clientWidth + 1)
      scrolls.push(`${{where}}: ${{b.scrollWidth}} px in ${{b.clientWidth}} px`);
  }}
  const column = Math.round(article.getBoundingClientRect().width);
  const tables = [...article.querySelectorAll("table")].map(t => ({{
    y: Math.round(t.getBoundingClientRect().top + win.scrollY),
    width: Math.round(t.getBoundingClientRect().width), column: column}}));
  const images = [...article.querySelectorAll("img")].map(i => ({{
    src: i.getAttribute("src"), natural: i.naturalWidth,
    shown: Math.round(i.getBoundingClientRect().width)}}));
  const wide = doc.documentElement.scrollWidth;
  if (wide > win.innerWidth + 1) cut.push(`the page scrolls sideways: ${{wide}} px wide`);
  const out = document.createElement("pre");
  out.id = "layout-report";
  out.textContent = JSON.stringify({{cut: cut, scrolls: scrolls, width: win.innerWidth,
                                     height: doc.documentElement.scrollHeight,
                                     tables: tables, images: images}});
  document.body.appendChild(out);
}});
</script></body></html>
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("check_layout: Chromium is not installed (apt-get install -y chromium)")
    return found


def _run(args: list[str], profile: str) -> str:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=True).stdout


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """The site on a loopback HTTP server (the probe reads the iframe's document: same origin)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


def measure(site: Path, root: str, page: str, width: int, profile: str) -> dict[str, Any]:
    """The probe's measurement of `page` at `width` px."""
    probe = site / f"_layout_probe_{width}.html"
    probe.write_text(PROBE.format(page=page, width=width), encoding="utf-8")
    try:
        dom = _run(["--virtual-time-budget=5000", "--window-size=1400,900", "--dump-dom",
                    f"{root}/{probe.name}"], profile)
    finally:
        probe.unlink()
    found = re.search(r'<pre id="layout-report">(.*?)</pre>', dom, re.DOTALL)
    if not found:
        raise RuntimeError(f"{page} at {width} px: the measurement did not run")
    return dict(json.loads(html.unescape(found.group(1))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path, help="the built site")
    parser.add_argument("--shots", type=Path, help="write screenshots here (<page>-<width>.png)")
    args = parser.parse_args(argv)
    pages = sorted(p.name for p in args.html.glob("*.html")
                   if p.stem not in ("genindex", "search"))
    problems = []
    print(f"{'page':<20} {'width':>8}  {'cut':>3} {'scroll':>6}  (boxes that scroll sideways)")
    with tempfile.TemporaryDirectory() as profile, serve(args.html) as root:
        for page in pages:
            for width in WIDTHS:
                result = measure(args.html, root, page, width, profile)
                problems += [f"{page} at {width} px: {c}" for c in result["cut"]]
                print(f"{page:<20} {width:>5} px  {len(result['cut']):>3} "
                      f"{len(result['scrolls']):>6}  {'; '.join(result['scrolls'])[:200]}")
                if args.shots:
                    args.shots.mkdir(parents=True, exist_ok=True)
                    height = min(int(result["height"]), MAX_HEIGHT)
                    _run([f"--window-size={width},{height}",
                          f"--screenshot={args.shots / page.replace('.html', f'-{width}.png')}",
                          f"{root}/{page}"], profile)
    print("\n".join(problems) or f"nothing cut on {len(pages)} pages at {WIDTHS} px")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
