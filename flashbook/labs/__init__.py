"""The labs: write a kernel against the simulated chip (``labcore.chip``) and have it graded on exactness,
HBM traffic per tensor against the closed form, SRAM peak against M, and a modelled time.

``grade(lab, kernel, **params)`` -> :class:`Report`; ``LABS`` / ``get_lab``; per lab, ``lab.reference`` (the
reference kernel) and ``lab.mistakes`` (the named mistaken kernels, with ``FEEDBACK`` lines).
"""
from .definitions import DECODE_SCENARIOS, FEEDBACK, LABS, Lab, get_lab
from .grader import TOLERANCE, decode_race, grade, run_kernel
from .report import Report, ShapeResult

__all__ = ["grade", "run_kernel", "decode_race", "Report", "ShapeResult", "Lab", "LABS", "get_lab", "FEEDBACK",
           "DECODE_SCENARIOS", "TOLERANCE"]
