#!/usr/bin/env python3
"""Renders SVG pictures to PNG and checks that each draws within its own canvas.

Usage: render_pictures.py RSVG_CONVERT FILE.svg...

Each picture is rendered twice with rsvg-convert (librsvg2-bin): as it is, which must succeed
(the renderer refuses malformed XML, an unescaped '&' in a label, say), and on a canvas
`margin` pixels wider and taller than it declares, where every pixel that is not white must lie
within the declared width and height: a label or an axis text that runs past the picture's
edge (the complaint that `7.23455 ... 72.3455ms` ran into it) shows up as ink outside. Exit 1
naming each picture that fails and by how much."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageOps

margin = 200


def widened(text: str):
    """The SVG on a larger canvas, and its declared size; None when it declares none."""
    root = re.search(r"<svg\b[^>]*>", text)
    if not root:
        return None
    tag = root.group(0)
    w = re.search(r'\bwidth="([\d.]+)"', tag)
    h = re.search(r'\bheight="([\d.]+)"', tag)
    if not w or not h:
        return None
    width, height = float(w.group(1)), float(h.group(1))
    new = tag.replace(w.group(0), f'width="{width + margin:g}"', 1)
    new = new.replace(h.group(0), f'height="{height + margin:g}"', 1)
    box = re.search(r'\bviewBox="([^"]*)"', new)
    if box:
        x, y, bw, bh = (float(v) for v in box.group(1).replace(",", " ").split())
        scale = bw / width  # user units per pixel: the widened box keeps the scale
        new = new.replace(box.group(0),
                          f'viewBox="{x:g} {y:g} {bw + margin * scale:g} {bh + margin * scale:g}"')
    return text.replace(tag, new, 1), width, height


def check(rsvg: str, path: Path, tmp: Path) -> str:
    plain = tmp / "plain.png"
    run = subprocess.run([rsvg, "-b", "white", "-o", str(plain), str(path)],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return f"{path}: does not render: {run.stderr.strip()}"
    wide = widened(path.read_text())
    if wide is None:
        return f"{path}: declares no width and height"
    text, width, height = wide
    svg = tmp / "wide.svg"
    svg.write_text(text)
    png = tmp / "wide.png"
    subprocess.run([rsvg, "-b", "white", "-o", str(png), str(svg)], check=True)
    ink = ImageOps.invert(Image.open(png).convert("L")).point(lambda v: 255 if v > 8 else 0)
    box = ink.getbbox()
    if box is None:
        return f"{path}: renders blank"
    right, bottom = box[2], box[3]
    if right > width + 1 or bottom > height + 1:
        return (f"{path}: draws past its {width:g} x {height:g} canvas "
                f"(ink to x = {right}, y = {bottom})")
    return ""


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    rsvg, files = sys.argv[1], [Path(f) for f in sys.argv[2:]]
    failures = []
    with tempfile.TemporaryDirectory() as d:
        for f in files:
            if why := check(rsvg, f, Path(d)):
                failures.append(why)
    for why in failures:
        print(why)
    print(f"{len(files) - len(failures)} of {len(files)} pictures render within their canvas")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
