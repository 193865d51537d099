"""The simulated chip of the labs: HBM tensors behind ``load``/``store``, an SRAM budget per CTA, a CTA grid.

A kernel is a Python function ``kernel(cta, **params)`` run by :meth:`Chip.launch`; it reaches HBM only
through ``cta.load`` (a ``with`` block that holds the tile in SRAM), ``cta.store`` and ``cta.atomic_add``; every
element moved is counted per tensor in ``chip.ledger`` (:class:`labcore.hbm.Ledger`, the book's counting
conventions), atomic adds apart in ``chip.atomics``; on-chip tiles are numpy arrays whose FLOPs are counted and
whose sources are tracked, so that what a kernel keeps on chip counts against ``M``; and :func:`modelled_time`
turns the counts into seconds on a GPU preset. A kernel written by a reader is first checked and rebuilt from its
source (:func:`~labcore.chip.rebuild` with :data:`~labcore.chip.CHIP_PROFILE`), with
``np`` bound to the facade of :mod:`labcore.chip.facade`, and run under step and time limits
(:mod:`labcore.chip.limits`). Modules, one idea each: ``hbm_tensor`` (HBM tensors), ``sram`` (the budget),
``tile`` (counted arrays and what is on chip), ``cta`` (one CTA's door to HBM), ``grid`` (the chip, its launches
and a program's view of it), ``cost`` (the time model), ``facade`` (``np`` and ``math`` in a kernel),
``kernel_source`` (check and rebuild a kernel), ``limits`` (steps and time).

Example::

    chip = Chip(M=1024, tensors={"x": np.arange(10.0)})
    chip.allocate("y", (10,))
    def double(cta):
        with cta.load("x", rows=(0, 10)) as x:
            cta.store("y", 2 * x, rows=(0, 10))
    chip.launch(double)
    chip.ledger.by_tensor()   # {'x': {'read': 10, 'write': 0}, 'y': {'read': 0, 'write': 10}}
"""
from .cost import TIME_DEFAULTS, modelled_time
from .cta import CTA, CTAState, OnChip
from .grid import ORDERS, Chip, DataRaceError, Launch, Program, UnknownTensorError
from .hbm_tensor import HBMTensor
from .kernel_source import CHIP_PROFILE, HOST_PROFILE, Finding, KernelSourceError, Profile, rebuild, rebuild_from_text
from .limits import KernelLimitError, run_limits
from .sram import SRAM, SRAMCapacityError
from .tile import FlopCounter, ReleasedTileError, Tile

__all__ = ["Chip", "CTA", "CTAState", "Launch", "Program", "DataRaceError", "UnknownTensorError", "OnChip", "HBMTensor", "SRAM", "SRAMCapacityError",
           "Tile", "FlopCounter", "ReleasedTileError", "modelled_time", "TIME_DEFAULTS", "ORDERS", "Profile",
           "Finding", "KernelSourceError", "rebuild", "rebuild_from_text", "CHIP_PROFILE", "HOST_PROFILE",
           "KernelLimitError", "run_limits"]
