"""A chapter's main text, its length and its reading time; writes each chapter's opening line.

    python tools/reading_time.py            # a table: main-text words and minutes per chapter
    python tools/reading_time.py --write    # also sets each chapter's "Reading time" line

The **main text** is the chapter's Markdown outside the folds a reader may skip: dropdown
admonitions ("Going deeper") and exercise solutions. Maths counts as one
word a formula, a link as its text. The **reading time** is the main text at 200 words a
minute plus half a minute for each code cell the page shows (its code is part of the
lesson), rounded up to 5 minutes. Every chapter states it in its opening line,
``*Reading time: about N minutes.*``; tests/test_book_layout.py checks that the line
says what this module computes.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORDS_PER_MINUTE = 200
MINUTES_PER_CODE_CELL = 0.5
OPENING = re.compile(r"^\*Reading time: about (\d+) minutes\.\*", re.M)

_FENCE_OPEN = re.compile(r"^(:{3,}|`{3,})\{([\w-]+)\}")
_FENCE_CLOSE = re.compile(r"^(:{3,}|`{3,})\s*$")


def _main_lines(cells: list[dict]) -> list[str]:
    """The Markdown lines of ``cells`` outside dropdowns and solutions, in order."""
    kept: list[str] = []
    in_solution = False
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        stack: list[list] = []  # [fence, hidden]
        for line in "".join(cell["source"]).splitlines():
            opened = _FENCE_OPEN.match(line)
            if opened and opened.group(2) == "solution-start":
                in_solution = True
            if opened and opened.group(2) == "solution-end":
                in_solution = False
            if opened:
                stack.append([opened.group(1), False])
                continue
            if stack and line.startswith(":class:") and "dropdown" in line:
                stack[-1][1] = True
                continue
            closed = _FENCE_CLOSE.match(line)
            if closed and stack and closed.group(1) == stack[-1][0]:
                stack.pop()
                continue
            if in_solution or any(hidden for _, hidden in stack):
                continue
            if line.startswith(":") and stack:  # a directive's option line
                continue
            kept.append(line)
    return kept


def count_words(markdown: str) -> int:
    """Words of MyST Markdown as read: a formula or an {eval} value is one word, a link
    its text."""
    text = re.sub(r"\$\$.*?\$\$(\s*\([\w-]+\))?", " F ", markdown, flags=re.S)
    text = re.sub(r"\$[^$\n]+\$", " F ", text)
    text = re.sub(r"\{\w+\}`[^`]*`", " F ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"`[^`]*`", " F ", text)
    return len(re.findall(r"[\w'’][\w'’.-]*", text))


def main_text(notebook: dict) -> str:
    return "\n".join(_main_lines(notebook["cells"]))


def _lab_visibility():
    spec = importlib.util.spec_from_file_location(
        "lab_visibility", Path(__file__).with_name("lab_visibility.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def shown_code_cells(notebook: dict) -> int:
    """Code cells the page shows open: not hidden by a tag, not in a worked solution."""
    hidden = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
    cells = notebook["cells"]
    return sum(1 for cell, in_solution in zip(cells, _lab_visibility().in_solutions(cells),
                                              strict=True)
               if cell["cell_type"] == "code" and "".join(cell["source"]).strip()
               and not set(cell.get("metadata", {}).get("tags", [])) & hidden
               and not in_solution)


def reading_minutes(notebook: dict) -> int:
    """The main text at 200 words a minute and half a minute per shown code cell, rounded
    up to 5 minutes."""
    minutes = (count_words(main_text(notebook)) / WORDS_PER_MINUTE
               + MINUTES_PER_CODE_CELL * shown_code_cells(notebook))
    return 5 * max(1, math.ceil(minutes / 5))


def stated_minutes(notebook: dict) -> int | None:
    """The minutes the chapter's opening line states, or None."""
    found = OPENING.search("".join(notebook["cells"][0]["source"]))
    return int(found.group(1)) if found else None


def _write(path: Path, notebook: dict) -> bool:
    """Set the opening line's minutes; True if the file changed."""
    first = notebook["cells"][0]
    source = "".join(first["source"])
    line = f"*Reading time: about {reading_minutes(notebook)} minutes.*"
    new = OPENING.sub(line.rstrip("*").rstrip(".").rstrip() + ".*", source, count=1) \
        if OPENING.search(source) else source
    if new == source:
        return False
    first["source"] = new.splitlines(True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    write = "--write" in argv
    print(f"{'chapter':44}{'main words':>11}{'code cells':>11}{'minutes':>9}{'stated':>8}")
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if write and _write(path, notebook):
            notebook = json.loads(path.read_text(encoding="utf-8"))
        print(f"{path.stem:44}{count_words(main_text(notebook)):>11}"
              f"{shown_code_cells(notebook):>11}{reading_minutes(notebook):>9}"
              f"{stated_minutes(notebook) or '-':>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
