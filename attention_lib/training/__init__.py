r"""The book's trained models, each a task: its data and its configuration of the one model.

Every model is the transformer of :mod:`attention_lib.model` (an attention layer whose
output projection is the read-out, for the soft dictionary and the shift task; a GPT, an
encoder, an encoder-decoder for the others), trained by its one training loop (Adam,
:func:`~attention_lib.training.Adam`). Everything is seeded, so a run is reproducible.

Modules
-------
``data``        the tasks' batches (:class:`RetrievalData`, :class:`ShiftData`,
                :class:`InductionData`)
``loop``        :class:`Task`, :func:`train`, :class:`TrainingResult`
``retrieval``   the soft dictionary (content decides): :func:`retrieval_task`, ...
``shift``       copy the token ``shift`` places back (position decides): :func:`shift_task`, ...
``multihead_retrieval``  the soft dictionary with query heads sharing key/value heads, linear
                attention or a window: :func:`multihead_retrieval_task`, ...
``model_file``  the trained soft dictionary as JSON: export, load, check
``induction``   a two-layer attention-only GPT forms an induction head:
                :func:`train_induction_model`, :func:`induction_scores`, ...
``coreference`` the tutorial's "it" sentence: a generated corpus and a trained encoder,
                :func:`coreference_examples`, :func:`train_coreference_model`
``translation`` a toy translation and a trained encoder-decoder:
                :func:`translation_examples`, :func:`train_translation_model`

Adding a task
-------------
A task is a :class:`Task`, seven fields, and :func:`train` does the rest (the seed,
the held-out set, Adam, the timing)::

    Task(name, config, n_distinct, make_data, init_params, loss_and_grads, evaluate)

- ``make_data(n, rng)`` draws ``n`` sequences; the object it returns has
  ``len()``, ``subset(index)`` and ``rows()`` (one int row per sequence);
- ``init_params(rng)`` returns the initial float64 arrays by name (usually
  :func:`init_params` of the shapes);
- ``loss_and_grads(params, batch)`` returns the minibatch's mean loss and one
  gradient per parameter (check it against central differences);
- ``evaluate(params, test)`` returns the held-out ``(accuracy, target_weight)``;
- ``config`` holds the task's sizes (recorded in the result) and ``n_distinct``
  how many different sequences ``make_data`` can draw.

``train(task, seed=..., steps=..., batch_size=..., lr=..., n_train=..., n_test=...)``
then returns a :class:`TrainingResult`; ``train_retrieval`` and ``train_shift`` are
exactly that for their task.

Dimension letters used in the shape comments:

- ``B``        number of sequences in a batch
- ``n``        positions a query can attend to (the stored pairs, or the tokens)
- ``t``        number of queries per sequence (1 for retrieval, ``n`` for the shift task)
- ``d``        size of a token representation (``d_model``)
- ``d_k``      size of a query or key; ``d_v`` size of a value
- ``c``        number of classes of the read-out (values, or tokens)
"""

from __future__ import annotations

# Re-exported names (the modules' own __all__ lists say which; __all__ below is their union).
from ..model.train import Adam, clip_by_global_norm  # noqa: F401
from . import (
    coreference,
    data,
    induction,
    loop,
    model_file,
    multihead_retrieval,
    retrieval,
    shift,
    translation,
)
from .coreference import (  # noqa: F401
    CoreferenceModel,
    coreference_config,
    coreference_examples,
    coreference_loss_and_grads,
    init_coreference_model,
    train_coreference_model,
    trained_coreference_model,
)
from .data import (  # noqa: F401
    InductionData,
    RetrievalData,
    ShiftData,
    make_induction_data,
    make_retrieval_data,
    make_shift_data,
)
from .induction import (  # noqa: F401
    InductionLog,
    InductionScores,
    head_ablation_losses,
    induction_config,
    induction_scores,
    induction_seed_survey,
    train_induction_model,
    trained_induction_model,
)
from .loop import Task, TrainingResult, init_params, train  # noqa: F401
from .model_file import (  # noqa: F401
    EXPORT_FORMAT,
    check_retrieval_model,
    export_retrieval_model,
    load_retrieval_model,
)
from .multihead_retrieval import (  # noqa: F401
    multihead_retrieval_forward,
    multihead_retrieval_loss_and_grads,
    multihead_retrieval_task,
    train_multihead_retrieval,
)
from .retrieval import (  # noqa: F401
    RETRIEVAL_PARAMS,
    retrieval_forward,
    retrieval_loss_and_grads,
    retrieval_task,
    train_retrieval,
)
from .shift import shift_forward, shift_loss_and_grads, shift_task, train_shift  # noqa: F401
from .translation import (  # noqa: F401
    TranslationModel,
    init_translation_model,
    train_translation_model,
    translate_by_rule,
    translation_configs,
    translation_examples,
    translation_held_out_pairs,
    translation_loss_and_grads,
)

__all__ = sorted(["Adam", "clip_by_global_norm"] + coreference.__all__ + data.__all__
                 + induction.__all__ + loop.__all__ + model_file.__all__
                 + multihead_retrieval.__all__ + retrieval.__all__ + shift.__all__
                 + translation.__all__)
