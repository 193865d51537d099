"""The labs: write a kernel against the simulated chip (``labcore.chip``) and have it graded on exactness,
HBM traffic per tensor against the closed form, SRAM peak against M, and a modelled time.

``grade(lab, kernel, ...)`` -> :class:`Report` (with ``as_dict()`` and ``as_row(student)``); ``grade_text(lab,
text)`` grades the definitions of a file's text without running its other code; ``LABS`` / ``get_lab``; per lab,
``lab.reference`` (the reference kernel, from ``flashbook.labs.solutions``), ``lab.starter`` and ``lab.mistakes``
(the named mistaken kernels of :mod:`flashbook.labs.mistakes`, with ``FEEDBACK`` lines). How the grader can be
trusted with kernels it never saw is the docstring of :mod:`flashbook.labs.grader`.
"""
from .definitions import DECODE_SCENARIOS, FEEDBACK, LABS, STARTERS, Lab, get_lab
from .grader import MAX_SPLITS, RACE_RULES, TOLERANCE, decode_race, grade, grade_text, run_kernel, try_kernel
from .report import CSV_FIELDS, Report, ShapeResult

__all__ = ["grade", "grade_text", "run_kernel", "try_kernel", "decode_race", "Report", "ShapeResult", "CSV_FIELDS",
           "Lab", "LABS", "get_lab", "FEEDBACK", "STARTERS", "DECODE_SCENARIOS", "TOLERANCE", "RACE_RULES",
           "MAX_SPLITS"]
