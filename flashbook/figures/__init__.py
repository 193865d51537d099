"""The book's figures, one module per topic (softmax, flash, precision, prefill, decode, fusion, megakernel).

Each module defines figure functions (parameters in, matplotlib Figure out, numbers from ``labcore``) and
registers its explorers with :func:`flashbook.explorer.register`; the shared helpers are in
:mod:`flashbook.figures.base`.
"""

__all__: list[str] = []
