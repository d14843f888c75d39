"""SVG plots for docs/benchmarks.md from the data the area scripts leave in the results
directory (no plotting library: the SVG is written by hand, so /usr/bin/python3 suffices).

usage: plots.py RESULTS_DIR PLOTS_DIR   (prints notes in Markdown on stdout)

  control-latency.csv          -> control-latency.svg (round-trip histogram per client)
  uplink-*-timeline.csv        -> uplink-drain.svg (backlog left over time, ours vs peer)
  footprint-rss.csv            -> footprint-rss.svg (mwgated RSS over time, goal line)
"""
import csv
import glob
import math
import os
import sys
from html import escape

results, plots = sys.argv[1], sys.argv[2]
os.makedirs(plots, exist_ok=True)
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]
WIDTH, HEIGHT = 720, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 55


def nice_ticks(low, high, count=6):
    """Round tick values spanning [low, high]."""
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=10 * magnitude)
    first = math.floor(low / step) * step
    ticks = [round(first, 10)]
    while ticks[-1] < high - step * 0.001 or len(ticks) < 2:
        ticks.append(round(first + len(ticks) * step, 10))
    return ticks


def label(value):
    return f"{value:g}" if abs(value) < 1e6 else f"{value:.3g}"


class Chart:
    def __init__(self, title, x_label, y_label, x_range, y_range):
        self.parts = []
        self.x_ticks = nice_ticks(*x_range)
        self.y_ticks = nice_ticks(*y_range)
        self.x0, self.x1 = self.x_ticks[0], self.x_ticks[-1]
        self.y0, self.y1 = self.y_ticks[0], self.y_ticks[-1]
        self.legend = []
        w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
        self.parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="white" stroke="#888"/>')
        for t in self.x_ticks:
            x = self.sx(t)
            self.parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + h}" stroke="#eee"/>')
            self.parts.append(f'<text x="{x:.1f}" y="{TOP + h + 16}" text-anchor="middle">{label(t)}</text>')
        for t in self.y_ticks:
            y = self.sy(t)
            self.parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + w}" y2="{y:.1f}" stroke="#eee"/>')
            self.parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{label(t)}</text>')
        self.parts.append(f'<text x="{LEFT + w / 2}" y="{HEIGHT - 14}" text-anchor="middle">{escape(x_label)}</text>')
        self.parts.append(f'<text transform="translate(16,{TOP + h / 2}) rotate(-90)" text-anchor="middle">{escape(y_label)}</text>')
        self.parts.append(f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-weight="bold">{escape(title)}</text>')

    def sx(self, v):
        return LEFT + (v - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)

    def sy(self, v):
        return TOP + (1 - (v - self.y0) / (self.y1 - self.y0)) * (HEIGHT - TOP - BOTTOM)

    def line(self, points, colour, name, dash=None, width=2):
        path = " ".join(f"{self.sx(x):.1f},{self.sy(y):.1f}" for x, y in points)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{extra}/>')
        if name:
            self.legend.append((name, colour, dash))

    def bars(self, edges, counts, colour, name, offset, of):
        for left, right, count in zip(edges, edges[1:], counts):
            if count == 0:
                continue
            slot = (self.sx(right) - self.sx(left)) / of
            x = self.sx(left) + slot * offset
            y = self.sy(count)
            self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(slot - 0.5, 0.5):.1f}" '
                              f'height="{self.sy(self.y0) - y:.1f}" fill="{colour}" fill-opacity="0.85"/>')
        self.legend.append((name, colour, None))

    def save(self, path):
        for i, (name, colour, dash) in enumerate(self.legend):
            y = TOP + 14 + i * 18
            x = WIDTH - RIGHT - 250
            extra = f' stroke-dasharray="{dash}"' if dash else ""
            self.parts.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{colour}" stroke-width="3"{extra}/>')
            self.parts.append(f'<text x="{x + 30}" y="{y}">{escape(name)}</text>')
        with open(path, "w") as f:
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
                    'font-family="sans-serif" font-size="12">\n')
            f.write(f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>\n')
            f.write("\n".join(self.parts))
            f.write("\n</svg>\n")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def control_latency():
    path = os.path.join(results, "control-latency.csv")
    if not os.path.exists(path):
        return
    series = {}
    for row in read_csv(path):
        series.setdefault(row["client"], []).append(float(row["ms"]))
    names = {"static": "mwctl (as shipped, static runtime)", "mwctl": "mwctl (dynamic runtime)", "busctl": "busctl call (peer)"}
    every = sorted(v for values in series.values() for v in values)
    # Clip the long tail at the 98th percentile so the bulk stays readable; say so.
    high = every[min(len(every) - 1, int(len(every) * 0.98))]
    low = min(every)
    bins = 30
    width = (high - low) / bins or 1
    edges = [low + i * width for i in range(bins + 1)]
    histograms = {}
    for name, values in series.items():
        counts = [0] * bins
        for v in values:
            counts[min(bins - 1, max(0, int((v - low) / width)))] += 1
        histograms[name] = counts
    top = max(max(c) for c in histograms.values())
    chart = Chart("Control API round trip, whole process (start to exit)", "milliseconds", "runs",
                  (low, high), (0, top))
    for i, name in enumerate(series):
        chart.bars(edges, histograms[name], COLOURS[i], names.get(name, name), i, len(series))
    chart.save(os.path.join(plots, "control-latency.svg"))
    clipped = sum(1 for v in every if v > high)
    print(f"- control-latency.svg: {len(every)} runs; {clipped} above {high:.1f} ms counted in the last bin.")


def uplink_drain():
    files = sorted(glob.glob(os.path.join(results, "uplink-*-timeline.csv")))
    files = [f for f in files if "-null-" not in f]
    if not files:
        return
    series = []
    for path in files:
        name = os.path.basename(path)[len("uplink-"):-len("-timeline.csv")]
        rows = [(float(r["seconds"]), int(r["documents"])) for r in read_csv(path)]
        if len(rows) > 1:
            total = rows[-1][1]
            series.append((name, [(t, total - d) for t, d in rows]))
    if not series:
        return
    longest = max(points[-1][0] for _, points in series)
    largest = max(points[0][1] for _, points in series)
    chart = Chart("Uplink: one-hour backlog drained over time", "seconds", "documents left to upload",
                  (0, longest), (0, largest))
    sinks = sorted({name.replace("peer-", "") for name, _ in series})
    for name, points in series:
        sink = name.replace("peer-", "")
        colour = COLOURS[sinks.index(sink) % len(COLOURS)]
        peer = name.startswith("peer-")
        chart.line(points, colour, f"{sink}: {'plain client (peer)' if peer else 'ours (sync service)'}",
                   dash="6,4" if peer else None)
    chart.save(os.path.join(plots, "uplink-drain.svg"))
    print("- uplink-drain.svg: documents left after each completed commit; solid ours, dashed the plain client.")


def footprint_rss():
    path = os.path.join(results, "footprint-rss.csv")
    if not os.path.exists(path):
        return
    rows = [(float(r["seconds"]), int(r["rss_kib"]) / 1024) for r in read_csv(path)]
    goal = 25e6 / 1048576
    chart = Chart("mwgated RSS, 4 boards streaming at 100 Hz", "seconds since all boards streamed", "RSS (MiB)",
                  (0, rows[-1][0]), (0, max(max(v for _, v in rows), goal) * 1.1))
    chart.line(rows, COLOURS[0], "mwgated RSS")
    chart.line([(0, goal), (rows[-1][0], goal)], COLOURS[1], "goal: 25 MB", dash="6,4", width=1.5)
    chart.save(os.path.join(plots, "footprint-rss.svg"))
    print("- footprint-rss.svg: RSS sampled once a second from /proc/PID/status.")


control_latency()
uplink_drain()
footprint_rss()
