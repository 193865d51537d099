"""labcore: the small, exact numpy engine behind flashbook.

Every number the book shows is computed here. Layers: data (hardware, models, published with
``labcore/data``) -> number formats (precision, fp8) -> algorithms (softmax, attention, blocks and flash, decode) ->
accounting (hbm, flops, waves) -> performance models (splits, decode_time and decode_model; prefill;
forward_work, forward_timeline and megakernel) -> display (units).
It imports numpy, ml_dtypes and the standard library only. The presentation (figures, explorers, the live face,
exercises) is the separate package ``flashbook``, which imports labcore; labcore never imports it. Argument checks shared by every module live in ``labcore.checks``.
"""
from .hbm import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .flops import *  # noqa: F401,F403
from .precision import *  # noqa: F401,F403
from .fp8 import *  # noqa: F401,F403
from .hardware import *  # noqa: F401,F403
from .blocks import *  # noqa: F401,F403
from .flash import *  # noqa: F401,F403
from .decode import *  # noqa: F401,F403
from .splits import *  # noqa: F401,F403
from .decode_time import *  # noqa: F401,F403
from .decode_model import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .waves import *  # noqa: F401,F403
from .forward_work import *  # noqa: F401,F403
from .forward_timeline import *  # noqa: F401,F403
from .forward_work import *  # noqa: F401,F403
from .forward_timeline import *  # noqa: F401,F403
from .megakernel import *  # noqa: F401,F403
from .roofline import *  # noqa: F401,F403
from .prefill import *  # noqa: F401,F403
from .units import *  # noqa: F401,F403
from .scheduler import *  # noqa: F401,F403
from .backward_schedule import *  # noqa: F401,F403
from .causal_schedule import *  # noqa: F401,F403
from .varlen import *  # noqa: F401,F403
from .split_plans import *  # noqa: F401,F403
from .paged import *  # noqa: F401,F403
from .mla import *  # noqa: F401,F403
from .mixed_batch import *  # noqa: F401,F403

from . import chip  # noqa: F401  (the labs' simulated chip: ``labcore.chip.Chip``)
from . import (attention, blocks, decode, decode_model, decode_time, flash, flops, forward_timeline, forward_work, fp8, hardware, hbm,
               megakernel, measured, models, precision, prefill, published, roofline, softmax, splits, units, waves,
               scheduler, backward_schedule, causal_schedule, varlen, split_plans, paged, mla, mixed_batch)

#: Every public name of the engine (the union of its modules' ``__all__``).
__all__ = sorted({name for mod in (hbm, attention, softmax, flops, precision, fp8, hardware, blocks, flash, decode, splits,
                                   decode_time, decode_model, models, waves, forward_work, forward_timeline,
                                   megakernel, roofline, prefill, units, scheduler, backward_schedule, causal_schedule, varlen, split_plans, paged, mla, mixed_batch)
           for name in mod.__all__})
# labcore.published (the store of published figures) stays a module: ``from labcore.published import published``;
# so does labcore.measured (the timings taken on a real GPU).

#: The book's version (one home: pyproject.toml, the footer and CITATION.cff read or are checked against it).
__version__ = "0.4.0"
