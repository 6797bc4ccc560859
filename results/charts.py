"""Charts of the benchmark evidence, as small standalone SVG files (standard library and
the benchmark's own pure-Python formatter; results/summarize.py puts the repository on
the import path).

One chart per op: for every shape and dtype of one evidence file with device time
(graph replay), the achieved fraction of the roofline floor of the best candidate, the
PyTorch baseline and the peer, as grouped bars against a 100% line (the ceilings
measured in the same run).  Hovering a bar shows its median time and achieved GB/s or
TFLOP/s.
"""

from __future__ import annotations

from html import escape

from checks.benchmark.statistics import fmt_throughput

ROLES = (
    ("candidate", "best candidate", "#3b6fb6"),
    ("baseline", "PyTorch baseline", "#e08a2c"),
    ("peer", "peer", "#8c8c8c"),
)
BAR, GAP, LEFT, TOP, PLOT_H, BOTTOM, MIN_WIDTH = 14, 18, 72, 46, 220, 124, 640


def groups(rows: list) -> list:
    """[(label, {role: best passing row by fraction of ceiling})] in the rows' order."""
    out: dict = {}
    for r in rows:
        if r.get("status") != "ok" or r.get("fraction_of_ceiling") is None:
            continue
        key = f"{r.get('shape')} {r.get('dtype')}"
        best = out.setdefault(key, {})
        role = r.get("role")
        if role not in best or r["fraction_of_ceiling"] > best[role]["fraction_of_ceiling"]:
            best[role] = r
    return list(out.items())


def svg(op: str, rows: list, source: str, ceilings: dict) -> str:
    """The chart as SVG text ("" when no row has a fraction of the ceiling)."""
    data = groups(rows)
    if not data:
        return ""
    top = max(1.0, max(r["fraction_of_ceiling"] for _, g in data for r in g.values()))
    top = (int(top * 10) + 1) / 10 if top > 1.0 else 1.0
    width = max(MIN_WIDTH, LEFT + len(data) * (3 * BAR + GAP) + 20)
    height = TOP + PLOT_H + BOTTOM
    y = lambda frac: TOP + PLOT_H * (1 - frac / top)
    copy, rate = ceilings.get("copy_gbps"), ceilings.get("bf16_matmul_tflops")
    ceiling_text = ", ".join(
        t
        for t in (f"copy {copy:.0f} GB/s" if copy else "", f"bf16 matmul {rate:.0f} TFLOP/s" if rate else "")
        if t
    )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{LEFT}" y="16" font-size="13" font-weight="bold">{escape(op)}: achieved '
        f"fraction of the roofline floor (device time)</text>",
        f'<text x="{LEFT}" y="32" fill="#555">from {escape(source)}; ceiling = '
        f"{escape(ceiling_text or 'not measured')}</text>",
    ]
    for i in range(0, int(top * 100) + 1, 25):
        yy = y(i / 100)
        out.append(f'<line x1="{LEFT}" x2="{width - 10}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">{i}%</text>')
    yy = y(1.0)
    out.append(
        f'<line x1="{LEFT}" x2="{width - 10}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#c0392b" '
        f'stroke-dasharray="5,3"/>'
    )
    out.append(f'<text x="{width - 12}" y="{yy - 4:.1f}" text-anchor="end" fill="#c0392b">ceiling</text>')
    for gi, (label, best) in enumerate(data):
        x0 = LEFT + GAP / 2 + gi * (3 * BAR + GAP)
        for bi, (role, _, colour) in enumerate(ROLES):
            r = best.get(role)
            if r is None:
                continue
            frac = r["fraction_of_ceiling"]
            x, yt = x0 + bi * BAR, y(frac)
            tip = (
                f"{label} {r.get('variant', '')} [{role}]: {r.get('median_us', 0):.2f} us, "
                f"{fmt_throughput(r)}, {frac * 100:.0f}% of the floor"
            )
            out.append(
                f'<rect x="{x:.1f}" y="{yt:.1f}" width="{BAR - 2}" '
                f'height="{TOP + PLOT_H - yt:.1f}" fill="{colour}"><title>{escape(tip)}'
                f"</title></rect>"
            )
        lx, ly = x0 + 1.5 * BAR, TOP + PLOT_H + 10
        out.append(
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="end" '
            f'transform="rotate(-40 {lx:.1f} {ly:.1f})">{escape(label)}</text>'
        )
    out.append(f'<line x1="{LEFT}" x2="{width - 10}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}" stroke="#333"/>')
    lx = LEFT
    for _, name, colour in ROLES:
        out.append(f'<rect x="{lx}" y="{height - 16}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14}" y="{height - 7}">{name}</text>')
        lx += 14 + 7 * len(name) + 16
    out.append("</svg>")
    return "\n".join(out) + "\n"
