"""flashbook performance budget (``make bench``): prints measured numbers next to their targets.

(a) per-notebook execution time and the total, executed with nbclient exactly as the book build does
    (``FLASHBOOK_STATIC=1``: interactive figures render all their frames), kernel start included;
(b) for every registered explorer: kernel-side slider-update latency, p50/p95 over a sweep of its sliders
    (the static grid plus each slider's live values, one at a time): the update a live kernel does on each
    move (compute + the persistent figure updated in place, drawn and encoded: flashbook.live.LiveFigure),
    its compute part (the numpy model), and the cost of a new figure instead (draw + encode);
(c) a clean book build (``jupyter-book build`` into a temporary folder, so ``_build`` is untouched);
(d) ``import labcore`` in a fresh interpreter (median of 5; also checks matplotlib stays unimported);
(e) the §4.5 FP8 experiment (``labcore.fp8_attention_errors()`` at its default setting, median of 3);
plus the weight of every page of that build (HTML, its images, its precomputed frames).

Targets on the project's 2-core machine: notebooks <= 60 s in total; each update p95 <= 100 ms with
compute p95 <= 10 ms; clean build <= 180 s; import <= 0.5 s; FP8 experiment <= 2 s. Benchmarks never run
inside the tests.

Usage: python bench/run.py [--skip-build] [--skip-notebooks] [--points N] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGETS = {"notebooks_total_s": 60.0, "update_p95_ms": 100.0, "compute_p95_ms": 10.0, "build_s": 180.0,
           "import_s": 0.5, "fp8_experiment_s": 2.0}


def toc_pages() -> list[str]:
    from flashbook.sections import toc_pages as pages

    return pages(ROOT / "_toc.yml")


def _read_notebook(docname: str):
    import nbformat

    ipynb = ROOT / (docname + ".ipynb")
    if ipynb.exists():
        return nbformat.read(ipynb, as_version=4)
    md = ROOT / (docname + ".md")
    if md.exists() and "kernelspec:" in md.read_text(encoding="utf-8")[:2000]:
        try:
            import jupytext
        except ImportError:
            return None
        return jupytext.read(md)
    return None


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# ----------------------------------------------------------------------------------------------- (a)
def bench_notebooks() -> list[dict]:
    from nbclient import NotebookClient

    os.environ["FLASHBOOK_STATIC"] = "1"  # what the book build's kernels see (book/_ext/flashbook_static.py)
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    rows = []
    for doc in toc_pages():
        nb = _read_notebook(doc)
        if nb is None:
            continue
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str((ROOT / doc).parent)}})
        t0 = time.perf_counter()
        error = ""
        try:
            client.execute()
        except Exception as exc:  # report, keep measuring the others
            error = type(exc).__name__
        rows.append({"notebook": doc, "seconds": time.perf_counter() - t0, "error": error})
    return rows


# ----------------------------------------------------------------------------------------------- (b)
def sweep_points(explorer, limit: int) -> list[dict]:
    pts = list(explorer.grid())
    base = explorer.defaults()
    for s in explorer.sliders:
        for v in s.live_values:
            pts.append({**base, s.name: v})
    seen, out = set(), []
    for p in pts:
        key = repr(sorted(p.items(), key=lambda kv: kv[0]))
        if key not in seen:
            seen.add(key)
            out.append(p)
    if len(out) > limit:  # evenly spaced subset, always keeping the first (defaults side) and the last
        step = (len(out) - 1) / (limit - 1)
        out = [out[round(i * step)] for i in range(limit)]
    return out


def bench_explorers(limit: int) -> list[dict]:
    """Kernel-side latency of a live slider move, per explorer, over :func:`sweep_points` in order.

    ``update`` is what the live widget does on each move (``flashbook.live.LiveFigure``): compute, then
    draw its content again into the persistent figure (``Explorer.update``; or draw a new one where the
    explorer has no set-up/content split or the setting needs another set-up), draw it once and encode the
    PNG. ``draw`` is the new-figure path for comparison (what each move cost before, and what the static
    book's frames cost). The garbage collector runs as usual.
    """
    os.environ.pop("FLASHBOOK_STATIC", None)
    from flashbook.explorer import all_explorers
    from flashbook.drawing import LIVE_DPI
    from flashbook.live import LiveFigure

    rows = []
    for name, ex in sorted(all_explorers().items()):
        pts = sweep_points(ex, limit)
        d = ex.defaults()
        ex.png(ex.compute(**d), d, dpi=LIVE_DPI)  # warm up imports, fonts and the frozen layout (not counted)
        live = LiveFigure(ex)
        live.render(**d)                          # the figure the widget shows first (not counted)
        comp, draw, upd = [], [], []
        for p in pts:
            t0 = time.perf_counter()
            data = ex.compute(**p)
            t1 = time.perf_counter()
            live.png(data, p)                      # exactly what a live slider move displays
            t2 = time.perf_counter()
            ex.png(data, p, dpi=LIVE_DPI)          # a new figure, for comparison
            t3 = time.perf_counter()
            comp.append((t1 - t0) * 1e3)
            upd.append((t2 - t0) * 1e3)
            draw.append((t3 - t2) * 1e3)
        rows.append({"explorer": name, "points": len(pts), "frames": ex.n_frames(),
                     "in_place": live.updates / len(pts),
                     "compute_p50_ms": pct(comp, 50), "compute_p95_ms": pct(comp, 95),
                     "draw_p50_ms": pct(draw, 50), "draw_p95_ms": pct(draw, 95),
                     "update_p50_ms": pct(upd, 50), "update_p95_ms": pct(upd, 95)})
    return rows


# ----------------------------------------------------------------------------------------------- (c)
def bench_build(outdir: Path) -> dict:
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(ROOT), "--path-output", str(outdir)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    warnings = len(re.findall(r"WARNING|ERROR", proc.stdout + proc.stderr))
    return {"seconds": seconds, "returncode": proc.returncode, "warnings": warnings,
            "html": str(outdir / "_build" / "html")}


def page_weights(html_root: Path) -> list[dict]:
    rows = []
    for doc in toc_pages():
        page = html_root / (doc + ".html")
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        frames = sum(len(m) for m in re.findall(r'<script type="application/json" class="fb-frames">(.*?)</script>',
                                                 text, flags=re.S))
        images = 0
        for src in set(re.findall(r'<img[^>]+src="([^"]+)"', text)):
            if src.startswith("data:") or "://" in src:
                continue
            f = (page.parent / src.split("#")[0].split("?")[0]).resolve()
            images += f.stat().st_size if f.exists() else 0
        rows.append({"page": doc, "html_kb": len(text.encode()) / 1024, "frames_kb": frames / 1024,
                     "images_kb": images / 1024, "players": text.count('class="fb-explorer"'),
                     "total_kb": (len(text.encode()) + images) / 1024})
    return rows


def dir_kb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1024 if path.exists() else 0.0


# ----------------------------------------------------------------------------------------------- (d)
def bench_import(repeats: int = 5) -> dict:
    code = ("import sys, time; t = time.perf_counter(); import labcore; dt = time.perf_counter() - t; "
            "print(dt, 'matplotlib' in sys.modules, 'ipywidgets' in sys.modules)")
    times, heavy = [], False
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        dt, mpl, ipw = out.stdout.split()
        times.append(float(dt))
        heavy |= mpl == "True" or ipw == "True"
    return {"median_s": statistics.median(times), "max_s": max(times), "imports_presentation": heavy}


# ----------------------------------------------------------------------------------------------- (e)
def bench_fp8(repeats: int = 3) -> dict:
    """Wall time of the §4.5 FP8 experiment (six low-precision attentions of 1024 x 1024 scores + the oracle)."""
    from labcore import fp8_attention_errors

    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fp8_attention_errors()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "max_s": max(times), "ratio": res["ratio"],
            "setting": res["setting"]}


# ----------------------------------------------------------------------------------------------- report
def table(rows: list[dict], cols: list[tuple[str, str, str]]) -> str:
    head = "| " + " | ".join(c[1] for c in cols) + " |"
    sep = "|" + "|".join("---:" if c[2] else "---" for c in cols) + "|"
    body = ["| " + " | ".join(format(r[k], f) if f else str(r[k]) for k, _, f in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body])


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "NOT MET"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-build", action="store_true", help="skip (c) the clean build (and page weight)")
    ap.add_argument("--skip-notebooks", action="store_true", help="skip (a) notebook execution")
    ap.add_argument("--points", type=int, default=60, help="max slider settings swept per explorer")
    ap.add_argument("--json", default=str(ROOT / "artifacts" / "bench.json"), help="where to write the numbers")
    args = ap.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    results: dict = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}}
    summary = []

    imp = bench_import()
    results["import"] = imp
    summary.append({"what": "import labcore (median of 5, fresh interpreter)", "value": f"{imp['median_s']:.3f} s",
                    "target": f"<= {TARGETS['import_s']} s", "status": verdict(imp["median_s"], TARGETS["import_s"])
                    + (" (imports matplotlib/ipywidgets!)" if imp["imports_presentation"] else "")})

    f8 = bench_fp8()
    results["fp8_experiment"] = f8
    summary.append({"what": "§4.5 FP8 experiment, fp8_attention_errors() (median of 3)",
                    "value": f"{f8['median_s']:.2f} s", "target": f"<= {TARGETS['fp8_experiment_s']} s",
                    "status": verdict(f8["median_s"], TARGETS["fp8_experiment_s"])})

    if not args.skip_notebooks:
        nbs = bench_notebooks()
        results["notebooks"] = nbs
        total = sum(r["seconds"] for r in nbs)
        print("\n(a) notebook execution (nbclient, FLASHBOOK_STATIC=1 as in the book build, kernel start included)\n")
        print(table(nbs + [{"notebook": "**total**", "seconds": total, "error": ""}],
                    [("notebook", "notebook", ""), ("seconds", "seconds", ".1f"), ("error", "error", "")]))
        summary.append({"what": f"all {len(nbs)} notebooks executed", "value": f"{total:.1f} s",
                        "target": f"<= {TARGETS['notebooks_total_s']:.0f} s",
                        "status": verdict(total, TARGETS["notebooks_total_s"])
                        + ("; errors: " + ", ".join(r["notebook"] for r in nbs if r["error"]) if any(
                            r["error"] for r in nbs) else "")})

    exs = bench_explorers(args.points)
    results["explorers"] = exs
    print("\n(b) interactive figures, kernel side, milliseconds: update = what a live slider move costs (compute +\n"
          "    the persistent figure updated in place, drawn and encoded); new figure = draw + encode a new Figure\n")
    if exs:
        print(table(exs, [("explorer", "explorer", ""), ("points", "settings", "d"), ("frames", "static frames", "d"),
                          ("in_place", "in place", ".0%"),
                          ("compute_p50_ms", "compute p50", ".2f"), ("compute_p95_ms", "compute p95", ".2f"),
                          ("draw_p50_ms", "new figure p50", ".0f"), ("draw_p95_ms", "new figure p95", ".0f"),
                          ("update_p50_ms", "update p50", ".0f"), ("update_p95_ms", "update p95", ".0f")]))
        worst_u = max(exs, key=lambda r: r["update_p95_ms"])
        worst_c = max(exs, key=lambda r: r["compute_p95_ms"])
        summary.append({"what": f"worst update p95 ({worst_u['explorer']})", "value": f"{worst_u['update_p95_ms']:.0f} ms",
                        "target": f"<= {TARGETS['update_p95_ms']:.0f} ms",
                        "status": verdict(worst_u["update_p95_ms"], TARGETS["update_p95_ms"])})
        summary.append({"what": f"worst compute p95 ({worst_c['explorer']})",
                        "value": f"{worst_c['compute_p95_ms']:.2f} ms", "target": f"<= {TARGETS['compute_p95_ms']:.0f} ms",
                        "status": verdict(worst_c["compute_p95_ms"], TARGETS["compute_p95_ms"])})
    else:
        print("(no explorers registered yet)")

    if not args.skip_build:
        with tempfile.TemporaryDirectory(prefix="flashbook-bench-") as tmp:
            b = bench_build(Path(tmp))
            html = Path(b["html"])
            weights = page_weights(html)
            b["static_kb"] = dir_kb(html / "_static")
            b["mathjax_kb"] = dir_kb(html / "_static" / "mathjax")
            b["site_kb"] = dir_kb(html)
        results["build"], results["page_weight"] = b, weights
        print("\n(c) page weight of the clean build (KB; frames are the players' precomputed PNGs inside the HTML)\n")
        print(table(weights, [("page", "page", ""), ("html_kb", "HTML", ".0f"), ("frames_kb", "of which frames", ".0f"),
                              ("images_kb", "images", ".0f"), ("players", "players", "d"), ("total_kb", "total", ".0f")]))
        print(f"\nshared assets: _static {b['static_kb'] / 1024:.1f} MB (MathJax {b['mathjax_kb'] / 1024:.1f} MB, "
              f"loaded on demand); whole site {b['site_kb'] / 1024:.1f} MB")
        status = verdict(b["seconds"], TARGETS["build_s"])
        if b["returncode"]:
            status += f" (build failed, exit {b['returncode']})"
        summary.append({"what": "clean book build (jupyter-book build, all notebooks)", "value": f"{b['seconds']:.0f} s",
                        "target": f"<= {TARGETS['build_s']:.0f} s", "status": status})
        if weights:
            heaviest = max(weights, key=lambda r: r["total_kb"])
            summary.append({"what": f"heaviest page ({heaviest['page']})", "value": f"{heaviest['total_kb']:.0f} KB",
                            "target": "(reported)", "status": ""})

    print(f"\nperformance budget ({os.cpu_count()} CPUs, Python {sys.version.split()[0]})\n")
    print(table(summary, [("what", "measure", ""), ("value", "measured", ""), ("target", "target", ""),
                          ("status", "status", "")]))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str))
    print(f"\nnumbers written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
