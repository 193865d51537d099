"""What ``grade`` returns, and how it prints (plain text, and an HTML table in a notebook)."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from labcore.units import fmt_seconds

__all__ = ["Report", "ShapeResult"]


@dataclass
class ShapeResult:
    """One graded shape: label, the largest absolute error, exact (bool), traffic and expected (``{tensor: {"read", "write"}}``
    in elements), traffic_ok, sram_peak and M (elements), raised (the kernel's exception as text, or None),
    notes (lines)."""

    label: str
    error: float
    exact: bool
    traffic: dict
    expected: dict
    traffic_ok: bool
    sram_peak: int
    M: int
    raised: str | None
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.exact and self.traffic_ok and self.sram_peak <= self.M

    def traffic_total(self) -> tuple:
        """``(moved, expected)`` elements."""
        def tot(t):
            return sum(v["read"] + v["write"] for v in t.values())
        return tot(self.traffic), tot(self.expected)

    def traffic_lines(self) -> list:
        """One line per tensor whose traffic differs from the closed form."""
        out = []
        for name in dict.fromkeys(list(self.expected) + list(self.traffic)):
            got = self.traffic.get(name, {"read": 0, "write": 0})
            exp = self.expected.get(name, {"read": 0, "write": 0})
            if got != exp:
                out.append(f"{name}: read {got['read']:,} / written {got['write']:,} elements; the closed form says "
                           f"read {exp['read']:,} / written {exp['write']:,}")
        return out


@dataclass
class Report:
    """A lab's grade.

    Attributes: lab, passed (bool), max_error (float, over all shapes), shapes (list of :class:`ShapeResult`),
    time (the last shape's :func:`labcore.chip.modelled_time` dict, or None), feedback (list of ``(mistake key,
    line)`` for the named mistakes recognised), race (lab 5: the "beat the heuristic" rows, or None).
    """

    lab: object
    passed: bool
    max_error: float
    shapes: list
    time: dict | None
    feedback: list
    race: list | None = None

    @property
    def mistakes(self) -> set:
        """Keys of the named mistakes recognised."""
        return {k for k, _ in self.feedback}

    def lines(self) -> list:
        """Every line of the report, as text."""
        head = "passed" if self.passed else "not yet"
        out = [f"Lab {self.lab.number}, {self.lab.title}: {head}. Largest |error| against the float64 reference: "
               f"{self.max_error:.1e}."]
        for s in self.shapes:
            moved, exp = s.traffic_total()
            mark = "ok" if s.ok else "no"
            out.append(f"  [{mark}] {s.label}: error {s.error:.1e}; HBM {moved:,} elements (closed form {exp:,}); "
                       f"SRAM peak {s.sram_peak:,} of M = {s.M:,}")
            if s.raised:
                out.append(f"       the kernel raised {s.raised}")
            out += [f"       {t}" for t in s.traffic_lines()]
            out += [f"       {n}" for n in s.notes]
        if self.time:
            out.append(f"  Modelled time of the last shape on {self.time['gpu']} (a model, labcore.chip.cost): "
                       f"{fmt_seconds(self.time['total'], digits=2)} over {len(self.time['launches'])} launch(es).")
        if self.race:
            for r in self.race:
                sc = r["scenario"]
                out.append(f"  {sc['gpu']}, batch {sc['batch']}, seqlen {sc['seqlen']:,}: your {r['yours']} splits "
                           f"{fmt_seconds(r['t_yours'], digits=1)} vs the heuristic's {r['heuristic']} "
                           f"{fmt_seconds(r['t_heuristic'], digits=1)} " + ("(ok)" if r["ok"] else "(slower)"))
        elif self.lab.key == "flash_decoding":
            out.append("  Beat the heuristic: pass choose_splits=... to grade to race flash-attn's split heuristic.")
        out += [f"  - {line}" for _, line in self.feedback]
        if not self.passed and not self.feedback:
            if any(s.traffic_total()[0] < s.traffic_total()[1] for s in self.shapes if s.raised is None):
                out.append("  - Fewer elements moved than this lab's closed form: the kernel follows another loop "
                           "order than the one graded here, or it keeps tiles after their `with` block (an np.array "
                           "copy, say), outside the SRAM the chip counts. Load each tile inside the block that uses it.")
            else:
                out.append("  - No known mistake recognised: compare your traffic per tensor with the closed form "
                           "above.")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        lines = self.lines()
        colour = "#1a7f37" if self.passed else "#9a6700"
        body = "<br>".join(html.escape(x).replace("  ", "&nbsp;&nbsp;") for x in lines[1:])
        return (f"<div style='font-family:monospace;font-size:90%'><b style='color:{colour}'>"
                f"{html.escape(lines[0])}</b><br>{body}</div>")
