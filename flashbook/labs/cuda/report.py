"""What a CUDA lab's ``grade`` returns, and how it prints (plain text, an HTML block in a notebook, a dict for a
gradebook)."""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from labcore.units import fmt_bytes, fmt_seconds

__all__ = ["CudaShapeResult", "CudaReport"]


def _total(t: dict) -> int:
    return sum(v["read"] + v["write"] for v in t.values())


@dataclass
class CudaShapeResult:
    """One graded shape of a CUDA lab.

    Attributes:
        label: the shape, as text. error: the largest ``|kernel - reference| / (1 + |reference|)`` (float; inf
            when an output is NaN or inf where the reference is finite). exact: error within the tolerance.
        traffic, expected: ``{array: {"read": n, "write": n}}`` counted and from the closed form (elements).
        atomics, expected_atomics: ``{array: operations}``.
        shared_bytes, shared_budget: the largest block's shared memory and the lab's budget (bytes).
        local_bytes: the most bytes of local arrays one thread held.
        races: one dict per race the simulator reported (``kind``, ``space``, ``array``, ``line``, ``other_line``
            (line numbers), ``message``). findings: lines (barriers, uninitialised shared memory, local arrays).
        raised: the kernel's failure as a line, or None (for a shape not run, why it was not).
        notes: further lines (traffic per array, outputs that are not finite).
        ran: False for a shape the grader did not run (the kernel never finished an earlier one).
    """

    label: str
    error: float
    exact: bool
    traffic: dict
    expected: dict
    atomics: dict
    expected_atomics: dict
    shared_bytes: int
    shared_budget: int
    local_bytes: int = 0
    races: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    raised: str | None = None
    notes: list = field(default_factory=list)
    ran: bool = True

    @property
    def moved(self) -> int:
        """Elements the kernel moved (plain reads and writes)."""
        return _total(self.traffic)

    @property
    def closed_form(self) -> int:
        """Elements the closed form moves for these tile sizes."""
        return _total(self.expected)

    @property
    def traffic_ok(self) -> bool:
        """The kernel moved no more than the closed form, and made no more atomic operations."""
        more_atomics = any(n > self.expected_atomics.get(k, 0) for k, n in self.atomics.items())
        return self.moved <= self.closed_form and not more_atomics

    @property
    def ok(self) -> bool:
        return (self.exact and self.raised is None and self.traffic_ok and self.shared_bytes <= self.shared_budget
                and not self.races and not self.findings)

    def traffic_lines(self) -> list:
        """One line per array whose count differs from the closed form (elements, then atomic operations)."""
        out = []
        for name in dict.fromkeys(list(self.expected) + list(self.traffic)):
            got = self.traffic.get(name, {"read": 0, "write": 0})
            exp = self.expected.get(name, {"read": 0, "write": 0})
            if got != exp:
                out.append(f"{name}: your kernel read {got['read']:,} and wrote {got['write']:,} elements; the "
                           f"closed form reads {exp['read']:,} and writes {exp['write']:,}")
        for name in dict.fromkeys(list(self.expected_atomics) + list(self.atomics)):
            got, exp = self.atomics.get(name, 0), self.expected_atomics.get(name, 0)
            if got != exp:
                out.append(f"{name}: your kernel made {got:,} atomic adds; the closed form makes {exp:,}")
        return out


@dataclass
class CudaReport:
    """A CUDA lab's grade.

    Attributes:
        lab: the :class:`~flashbook.labs.cuda.definitions.CudaLab`. passed (bool). max_error (float).
        shapes: list of :class:`CudaShapeResult`. params: the launch parameters graded.
        time: :func:`cudalab.timing.modelled_time` of the last shape's launches (dict) or None.
        measured: on a GPU, ``{"seconds": ..., "launches": [...]}`` measured with CUDA events, else None.
        feedback: ``[(mistake key, line)]`` for the named mistakes whose signature the runs show.
        seed: the inputs' seed when the caller fixed it, else None (a fresh seed nobody can predict).
        source: findings about the kernel's source that stopped the grading (lines), if any.
    """

    lab: object
    passed: bool
    max_error: float
    shapes: list
    params: dict
    time: dict | None = None
    measured: dict | None = None
    feedback: list = field(default_factory=list)
    seed: int | None = None
    source: list = field(default_factory=list)

    @property
    def mistakes(self) -> set:
        """Keys of the named mistakes recognised."""
        return {k for k, _ in self.feedback}

    @property
    def score(self) -> float:
        """Fraction of the graded shapes that passed (1.0 when the report passed)."""
        if self.source or not self.shapes:
            return 0.0
        return sum(s.ok for s in self.shapes) / len(self.shapes)

    def lines(self) -> list:
        """Every line of the report, as text."""
        lab = self.lab
        head = "passed" if self.passed else "not yet"
        params = ", ".join(f"{k} = {v}" for k, v in self.params.items())
        out = [f"Lab {lab.label}, {lab.title}: {head} ({params})."]
        if self.source:
            out.append("  Your kernel's source cannot be graded:")
            out += [f"    {s}" for s in self.source]
            return out
        reason = self._traffic_reason()
        if reason:
            out.append(reason)
        out.append(f"  Largest error against the float64 reference, |yours - reference| / (1 + |reference|): "
                   f"{self.max_error:.1e} (tolerance {_tol():.0e}; {_tol(True):.0e} where the scores are near +-1000).")
        for s in self.shapes:
            if not s.ran:
                out.append(f"  [no] {s.label}: {s.raised}")
                continue
            mark = "ok" if s.ok else "no"
            shared = f"shared memory {s.shared_bytes:,} B of {s.shared_budget:,} B"
            atom = sum(s.atomics.values())
            atomics = f", {atom:,} atomic adds" if atom or s.expected_atomics else ""
            out.append(f"  [{mark}] {s.label}: error {s.error:.1e}; your kernel moved {s.moved:,} elements "
                       f"(closed form {s.closed_form:,}){atomics}; {shared}")
            if s.raised:
                out.append(f"       the kernel failed: {s.raised}")
            if s.raised is None and s.moved < s.closed_form and s.exact:
                saved = s.closed_form - s.moved
                out.append(f"       {saved:,} elements fewer than the closed form ({saved / s.closed_form:.0%}): "
                           "better than the reference kernel")
            elif s.raised is None:
                out += [f"       {t}" for t in s.traffic_lines()]
            if s.shared_bytes > s.shared_budget:
                out.append(f"       shared memory over the budget: {s.shared_bytes:,} B > {s.shared_budget:,} B")
            if s.races:
                arrays = sorted({r["array"] for r in s.races})
                out.append(f"       {len(s.races)} race{'s' if len(s.races) != 1 else ''} on {', '.join(arrays)} "
                           "(below)")
            if s.findings:
                out.append(f"       {len(s.findings)} finding{'s' if len(s.findings) != 1 else ''} of the simulator "
                           "(below)")
            out += [f"       {n}" for n in s.notes]
        out += self._race_lines()
        if self.time:
            t = self.time
            parts = "; ".join(f"{x['name']}: {x['ctas']:,} CTA{'s' if x['ctas'] != 1 else ''}, {fmt_bytes(x['hbm_bytes'])}, "
                              f"{fmt_seconds(x['time'], digits=2)}" for x in t["launches"])
            out.append(f"  Modelled time of the last shape on {t['gpu']} (a model, cudalab.timing: HBM bytes shared "
                       f"by the running CTAs, FP32 compute, a launch overhead each): "
                       f"{fmt_seconds(t['total'], digits=2)} ({parts}).")
        if self.measured:
            out.append(f"  Measured on this GPU ({self.measured['device']}, CUDA events, median of "
                       f"{self.measured['repeats']} runs): {fmt_seconds(self.measured['seconds'], digits=2)}.")
        out += [f"  - {line}" for _, line in self.feedback]
        if self.seed is not None:
            out.append(f"  Inputs drawn with seed {self.seed}.")
        return out

    def _traffic_reason(self) -> str | None:
        """The line that says the global-memory traffic alone kept the kernel from passing (which arrays moved
        more or fewer elements than the closed form, summed over the shapes where the traffic is off), or None
        when the report passed or something else failed too."""
        if self.passed or self.source or not self.shapes:
            return None
        if not all(s.ran and s.exact and s.raised is None and not s.races and not s.findings
                   and s.shared_bytes <= s.shared_budget for s in self.shapes):
            return None
        off = [s for s in self.shapes if not s.traffic_ok]
        if not off:
            return None
        counts, adds = {}, {}
        for s in off:
            for name in dict.fromkeys(list(s.expected) + list(s.traffic)):
                got = s.traffic.get(name, {"read": 0, "write": 0})
                exp = s.expected.get(name, {"read": 0, "write": 0})
                c = counts.setdefault(name, {"read": 0, "write": 0})
                for k in c:
                    c[k] += got[k] - exp[k]
            for name in dict.fromkeys(list(s.expected_atomics) + list(s.atomics)):
                adds[name] = adds.get(name, 0) + s.atomics.get(name, 0) - s.expected_atomics.get(name, 0)
        parts = [f"{abs(d):,} {'more' if d > 0 else 'fewer'} {kind}s of {name}"
                 for name, c in counts.items() for kind, d in c.items() if d]
        parts += [f"{abs(d):,} {'more' if d > 0 else 'fewer'} atomic adds to {name}" for name, d in adds.items() if d]
        moved, closed = sum(s.moved for s in off), sum(s.closed_form for s in off)
        if moved > closed:
            total = f"moved {moved:,} elements where the closed form moves {closed:,} ({moved - closed:,} more)"
        else:
            total = f"made more atomic adds than the closed form (it moved {moved:,} elements, the closed form {closed:,})"
        shapes = f"{len(off)} of {len(self.shapes)} shape{'s' if len(self.shapes) != 1 else ''}"
        return (f"  Why not yet: the global-memory traffic alone (the values are exact on every shape, with no race, "
                f"error or barrier finding). On {shapes} your kernel {total}: {'; '.join(parts)}.")

    def _race_lines(self, most: int = 4) -> list:
        """The races and findings of every shape, each pair of lines once (a racecheck-style report)."""
        races, kinds = {}, {}
        for s in self.shapes:
            for r in s.races:
                key = (r["space"], r["array"], frozenset((r["line"], r["other_line"])))
                races.setdefault(key, r["message"])
                kinds.setdefault(key, set()).add(r["kind"])
        out = []
        if races:
            out.append("  Races (two accesses to one element, at least one a write, with nothing ordering them):")
            for key, msg in list(races.items())[:most]:
                also = sorted(kinds[key] - {msg.split("(", 1)[1].split(")", 1)[0]})
                out.append(f"    - {msg}" + (f"; also {', '.join(also)} between the same lines" if also else ""))
            if len(races) > most:
                out.append(f"    - and {len(races) - most} more pair(s) of lines")
        found = list(dict.fromkeys(re.sub(r"block \(\d+, \d+, \d+\)", "a block", f)
                                   for s in self.shapes for f in s.findings))
        if found:
            out.append("  The simulator also found:")
            out += [f"    - {f}" for f in found[:most]]
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        # one line for a console; the whole report is str(report), or the HTML block in a notebook
        lab = self.lab.label
        if self.source:
            n = len(self.source)
            return f"<CudaReport lab {lab}: not yet, source refused ({n} finding{'s' if n != 1 else ''})>"
        head = "passed" if self.passed else "not yet"
        ok = sum(s.ok for s in self.shapes)
        return f"<CudaReport lab {lab}: {head}, max error {self.max_error:.1e}, {ok}/{len(self.shapes)} shapes ok>"

    def _repr_html_(self) -> str:
        lines = self.lines()
        colour = "#1a7f37" if self.passed else "#9a6700"
        reason = self._traffic_reason()

        def face(x):
            text = html.escape(x).replace("  ", "&nbsp;&nbsp;")
            return f"<b>{text}</b>" if x == reason else text

        body = "<br>".join(face(x) for x in lines[1:])
        return (f"<div class='flashbook-lab-report' style='font-family:monospace;font-size:90%'>"
                f"<b style='color:{colour}'>{html.escape(lines[0])}</b><br>{body}</div>")

    def as_row(self, student: str = "") -> dict:
        """One gradebook row (the class command's columns): student, item (``"lab7_cuda_fa2"``), passed, score
        (0-1), error (the first source finding or failure, else ""), traffic (elements moved over the closed form's,
        over the shapes that ran: 1.0 matches it, below 1 beats it; None when nothing ran), on_chip_peak (bytes of
        shared memory of the largest block), on_chip_unit ("bytes"), feedback (the named mistakes' lines, joined
        by " | ")."""
        ran = [s for s in self.shapes if s.raised is None]
        closed = sum(s.closed_form for s in ran)
        error = self.source[0] if self.source else next((s.raised for s in self.shapes if s.raised), "")
        return {"student": student, "item": f"lab{self.lab.label}_{self.lab.key}", "passed": self.passed,
                "score": round(self.score, 4), "error": error,
                "traffic": round(sum(s.moved for s in ran) / closed, 4) if closed else None,
                "on_chip_peak": max((s.shared_bytes for s in self.shapes), default=0), "on_chip_unit": "bytes",
                "feedback": " | ".join(line for _, line in self.feedback)}

    def as_dict(self) -> dict:
        """A plain dict for a gradebook: ``lab``, ``passed``, ``score``, ``max_error``, ``moved`` and
        ``closed_form`` (elements, summed over the shapes), ``shared_peak`` (bytes), ``modelled_seconds``,
        ``feedback`` (lines), ``error`` (the first failure or source finding, or ""), ``shapes`` (per shape:
        ``label``, ``ok``, ``error``, ``moved``, ``closed_form``, ``shared_bytes``, ``raised``)."""
        first = next((s.raised for s in self.shapes if s.raised), None) or (self.source[0] if self.source else "")
        return {
            "lab": self.lab.key, "label": self.lab.label, "passed": self.passed, "score": self.score,
            "max_error": self.max_error, "moved": sum(s.moved for s in self.shapes),
            "closed_form": sum(s.closed_form for s in self.shapes),
            "shared_peak": max((s.shared_bytes for s in self.shapes), default=0),
            "modelled_seconds": self.time["total"] if self.time else None,
            "feedback": [line for _, line in self.feedback], "error": first,
            "shapes": [{"label": s.label, "ok": s.ok, "error": s.error, "moved": s.moved,
                        "closed_form": s.closed_form, "shared_bytes": s.shared_bytes, "raised": s.raised}
                       for s in self.shapes],
        }


def _tol(large: bool = False) -> float:
    from .definitions import TOLERANCE, TOLERANCE_LARGE

    return TOLERANCE_LARGE if large else TOLERANCE
