"""labcore: the small, exact numpy engine behind flashbook.

Every number the book shows is computed here. Layers (GUIDE §1): data (hardware, models) ->
algorithms (softmax, attention, decode) -> accounting (hbm, flops) -> performance models -> presentation
(``labcore.plots``, ``labcore.widgets``, ``labcore.exercises``; imported lazily, never here).
"""
from .hbm import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .flops import *  # noqa: F401,F403
from .precision import *  # noqa: F401,F403
from .hardware import *  # noqa: F401,F403
from .flash import *  # noqa: F401,F403
from .decode import *  # noqa: F401,F403
from .models import *  # noqa: F401,F403
from .waves import *  # noqa: F401,F403
from .megakernel import *  # noqa: F401,F403
from .prefill import *  # noqa: F401,F403
from .sections import *  # noqa: F401,F403
from .units import *  # noqa: F401,F403

from . import (attention, decode, flash, flops, hardware, hbm, megakernel, models, precision, prefill, published,  # noqa: E501
               sections, softmax, units, waves)

#: Every public name of the engine (the union of its modules' ``__all__``; the presentation layer,
#: ``labcore.plots``, ``labcore.widgets`` and ``labcore.exercises``, is imported on its own).
__all__ = sorted({name for mod in (hbm, attention, softmax, flops, precision, hardware, flash, decode, models,
                                   waves, megakernel, prefill, sections, units) for name in mod.__all__})
# labcore.published (the store of published figures) stays a module: ``from labcore.published import published``.

__version__ = "0.1.0"
