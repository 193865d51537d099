"""The simulated chip of the labs: HBM tensors behind ``load``/``store``, an SRAM budget per CTA, a CTA grid.

A kernel is a Python function ``kernel(cta, **params)`` run by :meth:`Chip.launch`; it reaches HBM only
through ``cta.load`` (a ``with`` block that holds the tile in SRAM) and ``cta.store``, every element moved
is counted per tensor in ``chip.ledger`` (:class:`labcore.hbm.Ledger`, elements as in :mod:`labcore.hbm`), on-chip tiles
are numpy arrays whose FLOPs are counted, and :func:`modelled_time` turns the counts into seconds on a GPU
preset. Modules, one idea each: ``hbm_tensor`` (HBM tensors), ``sram`` (the budget), ``tile``
(counted arrays), ``cta`` (one CTA's door to HBM), ``grid`` (the chip and its launches),
``cost`` (the time model).

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
from .cta import CTA, OnChip
from .grid import ORDERS, Chip, Launch
from .hbm_tensor import HBMTensor
from .sram import SRAM, SRAMCapacityError
from .tile import FlopCounter, Tile

__all__ = ["Chip", "CTA", "Launch", "OnChip", "HBMTensor", "SRAM", "SRAMCapacityError", "Tile", "FlopCounter",
           "modelled_time", "TIME_DEFAULTS", "ORDERS"]
