"""Grading a class: one command over a folder of submissions (``flashbook-grade SUBMISSIONS/ --out grades/``).

Each student's files are graded in a process of their own, with a time and a memory limit, so that a crash, an
endless loop, a syntax error or a missing kernel becomes one row with its reason and never stops the batch. The
grader's inputs, counters and verdicts live in that process, and the student's code in it is only what the labs'
source checks allow (their kernels and helpers, rebuilt from the file's text; none of the file's other code runs).
Out come a gradebook CSV, a Gradescope ``results.json`` per student and one readable report per student.

Modules: :mod:`~flashbook.grading.submissions` (what a folder holds and which lab each file is),
:mod:`~flashbook.grading.demo` (a made-up class to try it on),
:mod:`~flashbook.grading.worker` (grades one student, run in its own process),
:mod:`~flashbook.grading.gradebook` (the CSV, the Gradescope files, the reports),
:mod:`~flashbook.grading.cli` (the command).
"""
from .gradebook import CSV_FIELDS, gradescope_results, student_report, write_gradebook
from .submissions import Item, Submission, find_submissions, items_in

__all__ = ["find_submissions", "items_in", "Submission", "Item", "CSV_FIELDS", "write_gradebook",
           "gradescope_results", "student_report"]
