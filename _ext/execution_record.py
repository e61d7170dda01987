"""Sphinx extension: what the build's execution of each notebook produced, kept for the tests.

The website's notebooks execute while Sphinx reads them (myst-nb, ``execute_notebooks:
inline``), and myst-nb writes each executed notebook to ``_build/jupyter_execute/``. That
execution is the one ``make test`` checks, so that no chapter runs again in the same
environment:

* every ``{eval}`name``` role is evaluated in the notebook's kernel where the prose quotes
  it; this records the value it got, and the cell it was in, next to the executed
  notebook: ``_build/jupyter_execute/<page>.eval.json``, a list of ``{"cell": index,
  "name": name, "text/plain": repr}``. ``tests/book/test_executed_chapters.py`` compares them
  with the values the plain copies in ``colab/`` carry (``plain_notebook.eval``);
* at the end of a build, the time each page took to execute, as myst-nb measured it, is
  printed (slowest first) and written to ``_build/.page-seconds.json``
  (``tools/build_book.py`` starts the longest pages first next time).

myst-nb merges the streams of a cell for the page (``nb_merge_streams``) by changing the
cell's outputs in place, so the executed notebook it writes would hold the merged text and
the parts it merged; here it merges copies instead, and the executed notebook holds what
the kernel sent. The page is the same.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# (line, name, outputs) of the roles evaluated in the page this process is reading
_evaluated: list[tuple[int, str, list]] = []
SECONDS_FILE = ".page-seconds.json"


def cell_of_line(line: int) -> int:
    """The notebook cell a source line of a notebook page is in: myst-nb numbers the lines
    of cell ``i`` from ``(i + 1) * 10000`` (``myst_nb.core.nb_to_tokens``).

    >>> cell_of_line(40003)
    3
    """
    return line // 10000 - 1


def _recording_role():
    import myst_nb.ext.eval as nb_eval

    retrieve = nb_eval.retrieve_eval_data

    class RecordingEvalRole(nb_eval.EvalRoleAny):
        """myst-nb's ``{eval}`` role, which also records the value it showed."""

        def run(self):
            found: list = []

            def retrieve_and_keep(document, key):
                found.extend(retrieve(document, key))
                return found

            nb_eval.retrieve_eval_data = retrieve_and_keep
            try:
                result = super().run()
            finally:
                nb_eval.retrieve_eval_data = retrieve
            _evaluated.append((self.line, self.text, [dict(o.data) for o in found]))
            return result

    return RecordingEvalRole()


def _merge_copies() -> None:
    """myst-nb's merging of streams for the page, on copies of the executed outputs."""
    import myst_nb.core.render as nb_render

    merge = nb_render.coalesce_streams
    if getattr(merge, "merges_copies", False):
        return

    def merge_copies(outputs):
        return merge(copy.deepcopy(outputs))

    merge_copies.merges_copies = True
    nb_render.coalesce_streams = merge_copies


def _start_page(app: Sphinx, docname: str, source: list[str]) -> None:
    _evaluated.clear()


def _write_record(app: Sphinx, doctree) -> None:
    docname = app.env.docname
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        _evaluated.clear()
        return
    record = [{"cell": cell_of_line(line), "name": name,
               "text/plain": next((o["text/plain"] for o in outputs if "text/plain" in o), None)}
              for line, name, outputs in _evaluated]
    _evaluated.clear()
    out = Path(app.env.mystnb_config.output_folder, *docname.split("/")).with_suffix(
        ".eval.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _remember_read(app: Sphinx, env, docnames) -> None:
    app._execution_record_read = set(docnames)


def _report_times(app: Sphinx, exception) -> None:
    if exception is not None:
        return
    from myst_nb.sphinx_ import NbMetadataCollector

    seconds = {}
    for docname in sorted(app.env.found_docs):
        data = NbMetadataCollector.get_exec_data(app.env, docname)
        if data and data.get("runtime") is not None:
            seconds[docname] = round(float(data["runtime"]), 1)
    path = Path(app.outdir).parent / SECONDS_FILE
    path.write_text(json.dumps(seconds, indent=1) + "\n", encoding="utf-8")
    executed = {d: s for d, s in seconds.items()
                if d in getattr(app, "_execution_record_read", ())}
    if not executed:
        return
    logger.info("time per notebook in this build's execution (slowest first):")
    for docname, s in sorted(executed.items(), key=lambda kv: -kv[1]):
        logger.info(f"{s:7.1f} s  {docname}")
    logger.info(f"{sum(executed.values()):7.1f} s  in all (pages read in parallel "
                f"{app.parallel or 1} at a time)")


def setup(app: Sphinx) -> dict:
    # after myst-nb, which registered the role
    app.add_role("eval", _recording_role(), override=True)
    _merge_copies()
    app.connect("source-read", _start_page)
    app.connect("doctree-read", _write_record)
    app.connect("env-before-read-docs", _remember_read)
    app.connect("build-finished", _report_times)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
