"""Pictures of attention (matplotlib), one module per job.

- ``style``: the book's figure style (``use_book_style``, ``BOOK_RC``), colours, labels;
- ``matrices``: heatmaps of weights and masks, bar charts of one row of weights;
- ``shapes``: the matrices of attention as grids sized by their shapes;
- ``fallbacks``: the static pictures of the explorers (``projection_scale_grid``,
  ``saturation_grid``);
- ``diagrams``: one query's path, the split into heads, one step with the KV cache;
- ``maps``: the whole model (a GPT), one block pre-norm or post-norm, an
  encoder-decoder;
- ``tiles``: the tiles of a causal online softmax.

Every drawing function takes an optional ``ax`` (or makes its own figure) and returns
the axes (or figure) it drew on, so a chapter can compose figures. matplotlib is
imported here only, not by ``import attention_lib``.
"""

from __future__ import annotations

# Each module's public names (its __all__), so that `al.plotting.X` and
# `from attention_lib.plotting import X` keep working wherever X lives.
from . import diagrams, fallbacks, maps, matrices, shapes, style, tiles
from .diagrams import *  # noqa: F403
from .fallbacks import *  # noqa: F403
from .maps import *  # noqa: F403
from .matrices import *  # noqa: F403
from .shapes import *  # noqa: F403
from .style import *  # noqa: F403
from .tiles import *  # noqa: F403

__all__ = sorted(
    name for module in (style, matrices, shapes, fallbacks, diagrams, maps, tiles)
    for name in module.__all__
)
