"""The labs' reference solutions, one self-contained file per lab: what a lab page shows, and what a reader can paste
into the kernel cell as it is (it imports only numpy, or labcore for lab 5's ``choose_splits``, and defines every
helper it uses). The grader rebuilds them through the same checks as a reader's kernel
(:func:`labcore.chip.rebuild`), so they are written with the same rules.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["solution_text", "SOLUTION_FILES"]

#: The solution file of each lab, by lab key.
SOLUTION_FILES = {
    "online_softmax": "lab1_online_softmax.py",
    "fa1_forward": "lab2_flash_forward.py",
    "fa2_causal": "lab3_causal_fa2.py",
    "backward": "lab4_backward.py",
    "flash_decoding": "lab5_flash_decoding.py",
}


def solution_text(key: str) -> str:
    """The text of lab ``key``'s solution file, as a reader pastes it (its ``__all__`` line, which keeps the file
    out of the API reference, left out). Raises KeyError for an unknown key."""
    if key not in SOLUTION_FILES:
        raise KeyError(f"no solution for lab {key!r}; labs: {', '.join(SOLUTION_FILES)}")
    text = (Path(__file__).parent / SOLUTION_FILES[key]).read_text()
    return re.sub(r"\n\n__all__: list = \[\][^\n]*\n", "\n", text)
