"""Every input check of the public functions, once.

Each public function turns its arguments into numpy arrays and plain Python
values here, so that bad input fails early with a message that names the
argument, what it got and what was expected. Nothing in this package computes
attention.

- ``core``: arrays, scalars, flags, sizes, dtypes, positions, attention inputs;
- ``data``: index arrays, named weight arrays and model documents, matrix cells,
  the numbers a browser-side control may show;
- ``model``: optimiser settings, initial scales, float dtypes, batches of examples.
"""

from __future__ import annotations

from . import core, data, model
from .core import *  # noqa: F403
from .core import FULLY_MASKED_POLICIES as FULLY_MASKED_POLICIES
from .core import _asarray as _asarray
from .data import *  # noqa: F403
from .data import LARGEST_SHOWN as LARGEST_SHOWN
from .data import MAX_STEPS as MAX_STEPS
from .model import *  # noqa: F403

__all__ = core.__all__ + data.__all__ + model.__all__
