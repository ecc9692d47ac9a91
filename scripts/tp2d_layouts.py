#!/usr/bin/env python3
"""Draws docs/img/tp2d-layouts.svg: who holds which block of fc1's input, weight and output on a
4 x 2 grid (rank r at x = r mod 4, y = r div 4), as tp/layers.hpp lays them out."""
import sys

X, Y = 4, 2
COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"]


def rank(x, y):
    return y * X + x


def panel(out, left, top, title, rows, cols, owner, w=150, h=160, note=""):
    """A matrix of rows x cols blocks; owner(i, j) gives the ranks that hold block (i, j)."""
    for n, line in enumerate(title.split("|")):
        out.append(f'<text x="{left}" y="{top - 24 + 14 * n}" font-size="12" '
                   f'font-weight="bold">{line}</text>')
    bw, bh = w / cols, h / rows
    for i in range(rows):
        for j in range(cols):
            ranks = owner(i, j)
            x0, y0 = left + j * bw, top + i * bh
            sw = bw / len(ranks)
            for k, r in enumerate(ranks):
                out.append(f'<rect x="{x0 + k * sw:.1f}" y="{y0:.1f}" width="{sw:.1f}" '
                           f'height="{bh:.1f}" fill="{COLOURS[r]}" stroke="white"/>')
            label = ",".join(str(r) for r in ranks) if len(ranks) == 1 else ""
            out.append(f'<text x="{x0 + bw / 2:.1f}" y="{y0 + bh / 2 + 4:.1f}" font-size="10" '
                       f'text-anchor="middle" fill="white">{label}</text>')
    out.append(f'<text x="{left}" y="{top + h + 16}" font-size="11">{note}</text>')


def main(path):
    out = []
    # fc1 gathers over X (ag = X) and scatters over Y (rs = Y).
    panel(out, 20, 50, "fc1 input [s, H]|rows by x, columns by y", X, Y,
          lambda i, j: [rank(i, j)], note="s/4 x H/2 per rank")
    panel(out, 220, 50, "all-gathered over TP-X|[s, H/2] on each rank", X, Y,
          lambda i, j: [rank(x, j) for x in range(X)], note="a column: the 4 ranks of a y")
    panel(out, 420, 50, "weight [H, F]|rows by y, columns by x", Y, X,
          lambda i, j: [rank(j, i)], note="H/2 x F/4 per rank")
    panel(out, 620, 50, "output [s, F], reduce-|scattered over TP-Y", Y, X,
          lambda i, j: [rank(j, i)], note="s/2 x F/4 per rank")
    legend = "".join(
        f'<rect x="{20 + 95 * r}" y="262" width="12" height="12" fill="{COLOURS[r]}"/>'
        f'<text x="{36 + 95 * r}" y="272" font-size="11">rank {r} ({r % X},{r // X})</text>'
        for r in range(X * Y))
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="800" height="290" '
           'font-family="sans-serif">\n'
           '<rect width="800" height="290" fill="white"/>\n' + "\n".join(out) + legend + "\n</svg>\n")
    with open(path, "w") as f:
        f.write(svg)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/img/tp2d-layouts.svg")
