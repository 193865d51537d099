"""Issue 12 item 4: drop the static draw that precedes an explorer drawing the same figure (run once)."""
import json
import re
import sys
from pathlib import Path

# A code cell that only draws a figure function of labcore.plots, or these lines inside a cell.
DRAW_CELL = re.compile(r"^(from labcore\.plots\.\w+ import [\w, ]+\n)?(pf|pd)?\.?\w+_figure\(.*\)\s*$", re.S)
DRAW_LINES = [re.compile(r"^\w+\.figure\(\)$"), re.compile(r"^merge\.draw\(data\)$")]

for path in map(Path, sys.argv[1:]):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells, dropped = [], 0
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "code" and DRAW_CELL.match(src) and "gpt2_medium_figure" not in src:
            dropped += 1
            continue
        if c["cell_type"] == "code":
            lines = src.split("\n")
            kept = [ln for ln in lines if not any(p.match(ln) for p in DRAW_LINES)]
            if kept != lines:
                dropped += 1
                new = "\n".join(kept).splitlines(keepends=True)
                c["source"] = new
        cells.append(c)
    nb["cells"] = cells
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(path.name, dropped)
