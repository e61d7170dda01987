"""Execute chapter notebooks in place and store their outputs.

    python tools/execute_notebooks.py chapters/04_*.ipynb   # some
    python tools/execute_notebooks.py                       # all

Each notebook runs with chapters/ as its working directory, as on the website
and under nbval; the stored outputs are what GitHub, Colab and Binder show
before a reader runs anything, and what nbval compares against.

Alt text with numbers: a figure's alt text lives in its cell's metadata
(``mystnb.image.alt``), which no code can reach. A cell whose metadata has
``image_alt_eval``, the alt text written with {eval}`name` roles of ``str``
names (as in the prose), gets ``mystnb.image.alt`` filled in here from the
values those names hold once the whole notebook has run, so the alt text quotes
the numbers the figure is drawn from.

Widgets: a cell that shows ipywidgets sliders is stored without their view (a view
names a widget of the kernel that ran it, which no stored file has). Such a cell is
tagged ``nbval-ignore-output``: nbval follows no Output widget, so there the figure
drawn inside it arrives as a plain output of the cell.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from kernel_replies import wait_in_slices  # noqa: E402

ALT_TEMPLATE = "image_alt_eval"
EVAL_ROLE = re.compile(r"\{eval\}`([A-Za-z_]\w*)`")
_MARK = "alt-text values: "
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def alt_names(cells: list[dict]) -> list[str]:
    """The names quoted by the alt-text templates of these cells, in order, once each."""
    names: list[str] = []
    for cell in cells:
        for name in EVAL_ROLE.findall(cell.get("metadata", {}).get(ALT_TEMPLATE, "")):
            if name not in names:
                names.append(name)
    return names


def fill_alt_texts(cells: list[dict], values: dict[str, str]) -> int:
    """Write ``mystnb.image.alt`` of every templated cell from ``values``; return how many."""
    filled = 0
    for cell in cells:
        template = cell.get("metadata", {}).get(ALT_TEMPLATE)
        if template is None:
            continue
        alt = EVAL_ROLE.sub(lambda m: values[m.group(1)], template)
        cell["metadata"].setdefault("mystnb", {}).setdefault("image", {})["alt"] = alt
        filled += 1
    return filled


def drop_widget_views(cells: list[dict]) -> int:
    """Remove every output that shows a widget from these cells; return how many."""
    dropped = 0
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        kept = [o for o in cell.get("outputs", []) if WIDGET_VIEW not in o.get("data", {})]
        dropped += len(cell["outputs"]) - len(kept)
        cell["outputs"] = kept
    return dropped


def _values_cell(names: list[str]) -> nbformat.NotebookNode:
    source = ("import json as _json\n"
              f"print({_MARK!r} + _json.dumps({{n: globals()[n] for n in {names!r}}}))")
    return nbformat.v4.new_code_cell(source)


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    names = alt_names(nb.cells)
    if names:  # read the names' values at the end of the run, then drop the extra cell
        nb.cells.append(_values_cell(names))
    # nbclient keeps the widgets' state while it runs: it writes what a cell draws inside
    # an Output widget (an ipywidgets slider's figure) there, and without that store it
    # fails on the first one. Neither the state nor a widget's view is stored: a view
    # shows a widget of a running kernel, which a stored file has not (GitHub and the
    # plain copies would show nothing, JupyterLab "model not found" before the cell runs).
    wait_in_slices()  # a slider cell's reply can otherwise wait out the whole timeout
    NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nb.metadata.pop("widgets", None)
    drop_widget_views(nb.cells)
    if names:
        extra = nb.cells.pop()
        text = "".join(o.get("text", "") for o in extra.outputs if o.get("name") == "stdout")
        values = json.loads(text.split(_MARK, 1)[1])
        wrong = {n: type(v).__name__ for n, v in values.items() if not isinstance(v, str)}
        if wrong:
            raise TypeError(f"{path.name}: alt-text names must hold str, got {wrong}")
        fill_alt_texts(nb.cells, values)
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in paths:
        print(f"executing {path}", flush=True)
        execute(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
