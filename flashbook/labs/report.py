"""What ``grade`` returns, and how it prints (plain text, an HTML block in a notebook, a dict, a gradebook row)."""
from __future__ import annotations

import html
from dataclasses import dataclass, field

from labcore.units import fmt_seconds

__all__ = ["Report", "ShapeResult", "CSV_FIELDS"]

#: The columns of :meth:`Report.as_row`, in order (a gradebook's CSV header).
CSV_FIELDS = ("student", "item", "passed", "score", "error", "traffic", "sram_peak", "feedback")


def _total(t: dict) -> int:
    return sum(v["read"] + v["write"] for v in t.values())


@dataclass
class ShapeResult:
    """One graded shape.

    Attributes:
        label (str): the shape, as ``"N=45, N_k=31"``.
        error (float): largest ``|kernel - reference|`` over the outputs, each divided by max(1, that output's
            largest ``|reference|``) (inf where NaN or inf appears and the reference is finite).
        exact (bool): error within the tolerance and the kernel raised nothing.
        traffic, expected (dict): ``{tensor: {"read": n, "write": n}}`` in elements: the kernel's ledger and the
            closed form.
        atomics, expected_atomics (dict): ``{tensor: elements}`` added atomically: the kernel's and the closed form.
        sram_peak, M (int): the largest SRAM use of any CTA, and the budget (elements).
        raised (str or None): the kernel's exception as text.
        notes (list of str): lines for the report (the lab's notes, NaN and unwritten outputs).
        grid_problem (str or None): a launch that did not run the grid the lab requires.
    """

    label: str
    error: float
    exact: bool
    traffic: dict
    expected: dict
    sram_peak: int
    M: int
    raised: str | None
    notes: list = field(default_factory=list)
    atomics: dict = field(default_factory=dict)
    expected_atomics: dict = field(default_factory=dict)
    grid_problem: str | None = None

    @property
    def moved(self) -> int:
        """Elements the kernel moved: read + written + added atomically."""
        return _total(self.traffic) + sum(self.atomics.values())

    @property
    def closed_form(self) -> int:
        """Elements the closed form moves for these block sizes (plain + atomic)."""
        return _total(self.expected) + sum(self.expected_atomics.values())

    @property
    def traffic_ok(self) -> bool:
        """At most the closed form's elements (fewer is better, not wrong)."""
        return self.moved <= self.closed_form

    @property
    def ok(self) -> bool:
        return (self.exact and self.raised is None and self.traffic_ok and self.sram_peak <= self.M
                and self.grid_problem is None)

    def traffic_total(self) -> tuple:
        """``(moved, closed form)`` elements."""
        return self.moved, self.closed_form

    def traffic_lines(self) -> list:
        """One line per tensor whose traffic differs from the closed form (the kernel's count, then the closed
        form's)."""
        out = []
        zero = {"read": 0, "write": 0}
        for name in dict.fromkeys(list(self.expected) + list(self.traffic)):
            got, exp = self.traffic.get(name, zero), self.expected.get(name, zero)
            if got != exp:
                out.append(f"{name}: your kernel read {got['read']:,} and wrote {got['write']:,} elements; the closed "
                           f"form reads {exp['read']:,} and writes {exp['write']:,}")
        for name in dict.fromkeys(list(self.expected_atomics) + list(self.atomics)):
            got, exp = self.atomics.get(name, 0), self.expected_atomics.get(name, 0)
            if got != exp:
                out.append(f"{name}: your kernel added {got:,} elements atomically; the closed form adds {exp:,}")
        return out

    def as_dict(self) -> dict:
        """The result as plain data (JSON-able; ``error`` may be ``inf``)."""
        return {"label": self.label, "ok": self.ok, "error": self.error, "exact": self.exact, "moved": self.moved,
                "closed_form": self.closed_form, "traffic": self.traffic, "expected": self.expected,
                "atomics": self.atomics, "expected_atomics": self.expected_atomics, "sram_peak": self.sram_peak,
                "M": self.M, "raised": self.raised, "notes": list(self.notes), "grid_problem": self.grid_problem}


@dataclass
class Report:
    """A lab's grade.

    Attributes:
        lab: the :class:`~flashbook.labs.definitions.Lab`.
        passed (bool): every check passed.
        max_error (float): the largest error over all shapes (see :class:`ShapeResult`).
        shapes (list of :class:`ShapeResult`).
        time (dict or None): the last shape's :func:`labcore.chip.modelled_time`.
        feedback (list): ``(mistake key, line)`` for each named mistake recognised.
        race (list or None): lab 5's "beat the heuristic" rows (:func:`flashbook.labs.decode_race`).
        findings (list of str): what the kernel's source may not do (then nothing ran).
        seed (int or None): the inputs' seed, when the caller fixed it (a drawn seed is not shown).
        differences (list of str): what differs from the reference, when no named mistake explains it.
        starter (bool): the kernel is the lab's starter, unchanged.
        race_error (str or None): why the race could not run (``choose_splits`` raised, returned a bad count).
    """

    lab: object
    passed: bool
    max_error: float
    shapes: list
    time: dict | None
    feedback: list
    race: list | None = None
    findings: list = field(default_factory=list)
    seed: int | None = None
    differences: list = field(default_factory=list)
    starter: bool = False
    race_error: str | None = None

    @property
    def mistakes(self) -> set:
        """Keys of the named mistakes recognised."""
        return {k for k, _ in self.feedback}

    @property
    def score(self) -> float:
        """Fraction of the checks passed: each shape is one, lab 5's race one more; 0 when the source was refused."""
        if self.findings:
            return 0.0
        checks = [s.ok for s in self.shapes]
        if self.lab.key == "flash_decoding":
            checks.append(bool(self.race) and not self.race_error and all(r["ok"] for r in self.race))
        return sum(checks) / len(checks) if checks else 0.0

    @property
    def beats_by(self) -> int:
        """Elements fewer than the closed form over every shape (0 when the kernel does not beat it)."""
        if not self.shapes or not all(s.ok for s in self.shapes):
            return 0
        return sum(s.closed_form - s.moved for s in self.shapes)

    def lines(self) -> list:
        """Every line of the report, as text."""
        head = "passed" if self.passed else "not yet"
        if self.findings:
            out = [f"Lab {self.lab.number}, {self.lab.title}: {head}. The kernel was not run: its source uses what a "
                   "kernel may not (the grader rebuilds kernels from their source, with the chip's API, np and math "
                   "only):"]
            return out + [f"  - {f}" for f in self.findings]
        out = [f"Lab {self.lab.number}, {self.lab.title}: {head}. Largest error against the float64 reference: "
               f"{self.max_error:.1e} (relative to each output's largest entry)."]
        if self.seed is not None:
            out.append(f"  Inputs drawn from seed {self.seed} (fixed by the caller).")
        for s in self.shapes:
            mark = "ok" if s.ok else "no"
            out.append(f"  [{mark}] {s.label}: error {s.error:.1e}; HBM elements: your kernel {s.moved:,}, the closed "
                       f"form {s.closed_form:,}; SRAM peak {s.sram_peak:,} of M = {s.M:,}")
            if s.raised:
                out.append(f"       the kernel raised {s.raised}")
            if s.grid_problem:
                out.append(f"       {s.grid_problem}")
            out += [f"       {t}" for t in s.traffic_lines()]
            out += [f"       {n}" for n in s.notes]
        if self.time:
            out.append(f"  Modelled time of the last shape on {self.time['gpu']} (a model, labcore.chip.cost): "
                       f"{fmt_seconds(self.time['total'], digits=2)} over {len(self.time['launches'])} launch(es).")
        out += self._race_lines()
        out += [f"  - {line}" for _, line in self.feedback]
        out += [f"  - {line}" for line in self.differences]
        if self.passed and self.beats_by > 0:
            closed = sum(s.closed_form for s in self.shapes)
            out.append(f"  - Better than the closed form: over the {len(self.shapes)} shapes your kernel moved "
                       f"{self.beats_by:,} fewer elements ({self.beats_by / closed:.1%} of the closed form's "
                       f"{closed:,}), exact and within M.")
        return out

    def _race_lines(self) -> list:
        if self.lab.key != "flash_decoding":
            return []
        if self.race_error:
            return [f"  Beat the heuristic: {self.race_error}"]
        if not self.race:
            return ["  Beat the heuristic: pass choose_splits=... to grade to race flash-attn's split heuristic."]
        out = ["  Beat the heuristic (decode time model, labcore.decode_attention_time), your split count against "
               "flash-attn's, under three rules:"]
        for r in self.race:
            sc = r["scenario"]
            parts = []
            for rule in r["rules"]:
                parts.append(f"{rule['rule']}: {fmt_seconds(rule['t_yours'], digits=1)} vs "
                             f"{fmt_seconds(rule['t_heuristic'], digits=1)}" + ("" if rule["ok"] else " (slower)"))
            out.append(f"    {sc['gpu']}, batch {sc['batch']}, seqlen {sc['seqlen']:,}: your {r['yours']} splits vs "
                       f"the heuristic's {r['heuristic']} splits; " + "; ".join(parts))
        margins = {rule["rule"]: [] for rule in self.race[0]["rules"]}
        for r in self.race:
            for rule in r["rules"]:
                margins[rule["rule"]].append(1 - rule["t_yours"] / rule["t_heuristic"])
        best = {k: max(v) for k, v in margins.items()}
        rules = list(best)
        if best[rules[0]] > 0.01 and all(best[k] < 0.01 for k in rules[1:]):
            out.append(f"    Your choice wins by up to {best[rules[0]]:.1%} under the {rules[0]} rule, and by at most "
                       f"{max(best[k] for k in rules[1:]):.1%} under the other two. Why does the win vanish when the "
                       "last wave's CTAs share the bandwidth, or when two CTAs fit on an SM?")
        return out

    def as_dict(self) -> dict:
        """The whole report as plain data: lab (key, number, title), passed, score, max_error, seed (None if drawn),
        findings, starter, shapes (each :meth:`ShapeResult.as_dict`), feedback (``[{"mistake", "line"}]``),
        differences, race, race_error, time, beats_by, lines (the text report)."""
        return {"lab": {"key": self.lab.key, "number": self.lab.number, "title": self.lab.title},
                "passed": self.passed, "score": self.score, "max_error": self.max_error, "seed": self.seed,
                "findings": list(self.findings), "starter": self.starter,
                "shapes": [s.as_dict() for s in self.shapes],
                "feedback": [{"mistake": k, "line": t} for k, t in self.feedback],
                "differences": list(self.differences), "race": self.race, "race_error": self.race_error,
                "time": self.time, "beats_by": self.beats_by, "lines": self.lines()}

    def as_row(self, student: str = "") -> dict:
        """One gradebook row, with the keys of :data:`CSV_FIELDS`: student, item (``"lab2_fa1_forward"``), passed,
        score (0-1), error (the first source finding or exception, else ""), traffic (elements moved over the closed
        form's, summed over the shapes that ran: 1.0 matches it, below 1 beats it; None when nothing ran), sram_peak
        (elements, the largest over the shapes), feedback (the named mistakes' and differences' lines, joined by
        " | ")."""
        ran = [s for s in self.shapes if s.raised is None]
        closed = sum(s.closed_form for s in ran)
        error = self.findings[0] if self.findings else next((s.raised for s in self.shapes if s.raised), "")
        if not error and self.race_error:
            error = self.race_error
        feedback = [t for _, t in self.feedback] + list(self.differences)
        return {"student": student, "item": f"lab{self.lab.number}_{self.lab.key}", "passed": self.passed,
                "score": round(self.score, 4), "error": error,
                "traffic": round(sum(s.moved for s in ran) / closed, 4) if closed else None,
                "sram_peak": max((s.sram_peak for s in self.shapes), default=0), "feedback": " | ".join(feedback)}

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        lines = self.lines()
        colour = "#1a7f37" if self.passed else "#9a6700"
        body = "<br>".join(html.escape(x).replace("  ", "&nbsp;&nbsp;") for x in lines[1:])
        return (f"<div style='font-family:monospace;font-size:90%'><b style='color:{colour}'>"
                f"{html.escape(lines[0])}</b><br>{body}</div>")
