"""Plain-Markdown copies of the chapters, for Colab, GitHub's preview and VS Code.

    python tools/plain_notebooks.py                # execute each chapter, write colab/*.ipynb
    python tools/plain_notebooks.py chapters/04_*.ipynb
    python tools/plain_notebooks.py --keep-values  # reuse the values recorded in colab/
    python tools/plain_notebooks.py --check        # exit 1 if a copy is stale (no kernel)

Those readers render CommonMark with ``$...$`` maths and nothing of MyST, so each chapter
listed in ``_toc.yml`` becomes ``colab/<same name>.ipynb``, where

- every ``{eval}`name``` is the value the name holds when the chapter reaches that cell
  (the chapter is executed once, in a kernel, with a probe before each such cell; the
  values are recorded in the copy's metadata, ``plain_notebook.eval``);
- a labelled equation ``$$ ... $$ (label)`` shows its website number as ``\\tag{N}``;
  ``(label)=`` targets are dropped;
- ``{eq}``, ``{ref}``, ``{numref}`` and ``{doc}`` are links to the website (see
  ``site_url``; pages at ``<docname>.html``, equations at ``#equation-<label>``);
- ``{cite}``, ``{cite:p}`` and ``{cite:t}`` are author-year links to the references page
  (``references.bib``; entries at ``#cite-<key>``, ``bibtex_cite_id`` in ``_config.yml``);
- admonitions are blockquotes (a ``dropdown`` one, and any with display maths, a
  ``<details>`` block), exercises are headings, solutions ``<details>`` blocks;
- ``{figure}`` and ``{image}`` are Markdown images; links to ``.md`` pages go to the website;
- a footnote (not CommonMark) is a superscript number, ``<sup>1</sup>``, and its text a
  paragraph where it is defined that starts with the same number (numbered per chapter);
- code cells keep their code and stored outputs; a cell tagged ``remove-input`` +
  ``remove-output`` (it only formats prose numbers) is dropped when no later cell reads or
  could be affected by anything it binds or touches, and otherwise kept, collapsed;
  ``remove-*`` tags are dropped, the others kept. The Colab install cell stays first.

Anything MyST this does not know stops it with the chapter and the text. The chapters stay
the source; ``tests/test_plain_notebooks.py`` checks that the copies are current.
"""

from __future__ import annotations

import ast
import codecs
import copy
import importlib.util
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import latexcodec  # noqa: F401  (registers the "ulatex" codec)
import yaml
from docutils.nodes import make_id

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = "colab"
PROBE = "@@plain-notebook-eval@@ "
DROPPED_TAGS = {"remove-input", "remove-output", "remove-cell"}
ADMONITIONS = {"admonition", "note", "tip", "hint", "important", "warning", "caution",
               "attention", "danger", "error", "seealso"}
ROLE = re.compile(r"\{([A-Za-z][\w:-]*)\}`([^`]*)`")
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
EQ_LABEL = re.compile(r"^[ \t]*\$\$[ \t]*\((?P<label>[^)\s]+)\)[ \t]*$")
FOOTNOTE_REF = re.compile(r"\[\^(?P<label>[^\]\s]+)\]")
FOOTNOTE_DEF = re.compile(r"^\[\^(?P<label>[^\]\s]+)\]:[ \t]*(?P<text>.*)$")
TARGET = re.compile(r"^\((?P<label>[^)\s]+)\)=[ \t]*$")
LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<url>[^)\s]+)\)")


class PlainError(ValueError):
    """MyST the generator does not know how to write as plain Markdown."""


# --------------------------------------------------------------------------- the book


def _config(root: Path) -> dict:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def site_url(root: Path = ROOT) -> str:
    """The website's address, ending in ``/`` (``tools/colab_cell.py``'s, where the install
    cell finds the library's wheel)."""
    try:
        return _colab_cell().site_url(root)
    except ValueError as e:
        raise PlainError(str(e)) from None


def _colab_cell():
    spec = importlib.util.spec_from_file_location("colab_cell", Path(__file__).with_name(
        "colab_cell.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toc_entries(root: Path = ROOT) -> list[tuple[str, bool]]:
    """``(docname, numbered)`` for every page of ``_toc.yml``, in reading order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    entries = [(toc["root"], False)]
    for part in toc.get("parts", []):
        entries += [(c["file"], bool(part.get("numbered"))) for c in part["chapters"]]
    return entries


def _doc_path(root: Path, docname: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (root / f"{docname}{suffix}").exists():
            return root / f"{docname}{suffix}"
    raise PlainError(f"_toc.yml lists {docname!r}, which does not exist")


def _markdown_of(path: Path) -> list[str]:
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


@dataclass
class Book:
    """What a page needs to know about the others: labels, numbers, titles, references."""

    root: Path
    site: str
    chapter_number: dict[str, int] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    # label -> (docname, kind, number or title)
    labels: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    citations: dict[str, str] = field(default_factory=dict)

    def page(self, docname: str, anchor: str = "") -> str:
        return f"{self.site}{docname}.html" + (f"#{anchor}" if anchor else "")


def load_book(root: Path = ROOT) -> Book:
    book = Book(root=root, site=site_url(root))
    number = 0
    counters: dict[tuple[str, tuple[int, ...]], int] = {}
    for docname, numbered in toc_entries(root):
        if numbered:
            number += 1
            book.chapter_number[docname] = number
        # Sphinx numbers labelled equations and exercises per chapter ("4.2"); pages
        # outside the numbered parts share one counter ("3").
        secnum = (number,) if numbered else ()
        for text in _markdown_of(_doc_path(root, docname)):
            _index_labels(book, docname, text, secnum, counters)
    book.citations = _read_citations(root / "references.bib")
    return book


def _index_labels(book: Book, docname: str, text: str, secnum: tuple[int, ...],
                  counters: dict) -> None:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        heading = re.match(r"^#{1,6}\s+(.*)$", line)
        if heading and docname not in book.titles:
            book.titles[docname] = heading.group(1).strip()
        found = EQ_LABEL.match(line)
        if found:
            book.labels[found["label"]] = (docname, "eq", _next(counters, "eq", secnum))
        found = TARGET.match(line)
        if found:
            following = next((ln for ln in lines[i + 1:] if ln.strip()), "")
            heading = re.match(r"^#{1,6}\s+(.*)$", following)
            # a target on a heading is a section; anywhere else it has no title of its own
            title = heading.group(1).strip() if heading else ""
            book.labels[found["label"]] = (docname, "section", title)
        fence = FENCE.match(line)
        if fence and fence["name"] == "exercise":
            label = next((m.group(1) for ln in lines[i + 1:i + 4]
                          if (m := re.match(r"^:label:\s*(\S+)", ln))), None)
            num = _next(counters, "exercise", secnum)
            if label:
                book.labels[label] = (docname, "exercise", num)


def _next(counters: dict, kind: str, secnum: tuple[int, ...]) -> str:
    counters[kind, secnum] = counters.get((kind, secnum), 0) + 1
    return ".".join(map(str, (*secnum, counters[kind, secnum])))


def _latex(text: str) -> str:
    return codecs.decode(text, "ulatex").replace("{", "").replace("}", "")


def _read_citations(path: Path) -> dict[str, str]:
    """Author-year text of every entry of the bibliography ("Vaswani et al., 2017")."""
    from pybtex.database import parse_file

    out = {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author", [])
        names = [_latex(" ".join(p.prelast_names + p.last_names)) for p in people
                 if str(p) != "others"]
        etal = len(names) > 2 or any(str(p) == "others" for p in people)
        year = entry.fields.get("year", "")
        if not names:
            who = _latex(entry.fields.get("key") or entry.fields.get("title", key))
            out[key] = f"{who}, {year}" if year else who
            continue
        who = f"{names[0]} et al." if etal else " and ".join(names)
        out[key] = f"{who}, {year}" if year else who
    return out


# ----------------------------------------------------------------------------- markdown


@dataclass
class Page:
    """The chapter being converted, for messages and numbering."""

    book: Book
    docname: str
    values: dict[str, str]
    exercise: int = 0
    solution: str | None = None  # inside a gated solution: its title
    footnotes: dict[str, int] = field(default_factory=dict)  # label -> its number

    def footnote(self, label: str) -> str:
        number = self.footnotes.setdefault(label, len(self.footnotes) + 1)
        return f"<sup>{number}</sup>"

    def fail(self, what: str, text: str) -> PlainError:
        return PlainError(f"{self.docname}: {what}: {text.strip()[:200]!r}")


def convert_markdown(text: str, page: Page) -> str:
    """One markdown cell as plain CommonMark (maths in ``$``)."""
    return _tidy("\n".join(_blocks(text.splitlines(), page)))


def _tidy(text: str) -> str:
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def _blocks(lines: list[str], page: Page) -> list[str]:
    out: list[str] = []
    i = 0
    code_fence: str | None = None
    while i < len(lines):
        line = lines[i]
        if code_fence:  # inside a plain code block: copied as it is
            out.append(line)
            if line.strip().startswith(code_fence):
                code_fence = None
            i += 1
            continue
        plain_fence = re.match(r"^(`{3,}|~{3,})(?!\{)", line)
        if plain_fence:
            code_fence = plain_fence.group(1)
            out.append(line)
            i += 1
            continue
        directive = FENCE.match(line)
        if directive:
            end = _closing(lines, i, directive["fence"], page)
            options, body = _options(lines[i + 1:end])
            if directive["name"] == "solution-start":
                # a gated solution: what follows in this cell is its explanation
                out += _solution(directive["arg"].strip(), body + lines[end + 1:], page)
                return out
            if directive["name"] == "solution-end":
                page.solution = None
            out += _directive(directive["name"], directive["arg"].strip(), options, body, page)
            i = end + 1
            continue
        if re.match(r"^[ \t]+(`{3,}|:{3,})\{", line):
            raise page.fail("an indented directive", line)
        if re.match(r"^[ \t]*:{3,}", line):
            raise page.fail("a colon fence with no directive", line)
        if TARGET.match(line):
            i += 1
            continue
        if line.strip() == "$$":  # display maths, up to `$$` or `$$ (label)`
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].strip() == "$$" or EQ_LABEL.match(lines[j])), None)
            if end is None:
                raise page.fail("display maths with no closing $$", line)
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}$$")
            out += lines[i + 1:end]
            label = EQ_LABEL.match(lines[end])
            if label:
                out.append(f"{indent}\\tag{{{_equation(label['label'], page)[0]}}}")
            out.append(f"{indent}$$")
            i = end + 1
            continue
        if EQ_LABEL.match(line) or re.search(r"\$\$[ \t]*\(\S+\)[ \t]*$", line):
            raise page.fail("an equation label outside display maths", line)
        note = FOOTNOTE_DEF.match(line)
        if note:
            line = f"{page.footnote(note['label'])} {note['text']}"
        out.append(_inline(line, page))
        i += 1
    return out


def _closing(lines: list[str], start: int, fence: str, page: Page) -> int:
    depth = 0
    for j in range(start + 1, len(lines)):
        stripped = lines[j].strip()
        opening = FENCE.match(stripped)
        if opening and opening["fence"] == fence:
            depth += 1
        elif stripped == fence:
            if depth == 0:
                return j
            depth -= 1
    raise page.fail("a directive that is never closed", lines[start])


def _options(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    options = {}
    i = 0
    while i < len(lines) and (m := re.match(r"^:([\w-]+):\s*(.*)$", lines[i])):
        options[m.group(1)] = m.group(2).strip()
        i += 1
    return options, lines[i:]


def _details(summary: str, body: list[str], page: Page) -> list[str]:
    return ["<details>", f"<summary><strong>{summary}</strong></summary>", "",
            *_blocks(body, page), "", "</details>", ""]


def _solution(label: str, body: list[str], page: Page, gated: bool = True) -> list[str]:
    target = page.book.labels.get(label)
    if not target or target[1] != "exercise":
        raise page.fail("a solution to a label that is no exercise", label)
    title = f"Solution to Exercise {target[2]}"
    if gated:
        page.solution = title
    if not "".join(body).strip():
        return [f"**{title}**"]
    return _details(title, body, page)


def _directive(name: str, arg: str, options: dict[str, str], body: list[str],
               page: Page) -> list[str]:
    classes = options.get("class", "").split()
    if name in ADMONITIONS:
        title = _inline(arg, page) if arg else name.capitalize()
        inner = _blocks(body, page)
        if "dropdown" in classes or any(ln.strip().startswith("$$") for ln in inner):
            # a blockquote would put "> " inside multi-line maths
            return _details(title, body, page)
        quoted = [f"> **{title}**", ">"] + [f"> {ln}".rstrip() for ln in _tidy(
            "\n".join(inner)).splitlines()]
        return ["", *quoted, ""]
    if name == "exercise":
        page.exercise += 1
        label = options.get("label")
        number = (page.book.labels[label][2] if label in page.book.labels
                  else str(page.exercise))
        title = f"Exercise {number}" + (f" ({_inline(arg, page)})" if arg else "")
        return ["", f"### {title}", "", *_blocks(body, page), ""]
    if name == "solution":
        return _solution(arg, body, page, gated=False)
    if name == "solution-end":
        return []
    if name in ("figure", "image"):
        alt = options.get("alt") or (" ".join(body).strip() if name == "figure" else "")
        caption = _tidy("\n".join(_blocks(body, page))) if name == "figure" else ""
        return ["", f"![{alt}]({_local_path(arg, page)})", "", *([caption] if caption else [])]
    if name == "math":
        return ["$$", *body, "$$"]
    raise page.fail(f"the directive {{{name}}} has no plain form", f"{{{name}}} {arg}")


def _local_path(path: str, page: Page) -> str:
    # copies live in colab/, beside chapters/: paths relative to the chapter still work
    return path


def _equation(label: str, page: Page) -> tuple[str, str]:
    target = page.book.labels.get(label)
    if not target or target[1] != "eq":
        raise page.fail("an equation label that no page defines", label)
    docname, _kind, number = target
    return number, page.book.page(docname, f"equation-{make_id(label)}")


def _inline(line: str, page: Page) -> str:
    out = ROLE.sub(lambda m: _role(m.group(1), m.group(2), page), line)
    out = LINK.sub(lambda m: _link(m["text"], m["url"], page), out)
    out = FOOTNOTE_REF.sub(lambda m: page.footnote(m["label"]), out)
    leftover = re.search(r"\{[A-Za-z][\w:-]*\}`", out)
    if leftover:
        raise page.fail("a role that is not closed on its line", line)
    return out


def _split_ref(text: str) -> tuple[str | None, str]:
    m = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", text.strip())
    return (m.group(1), m.group(2)) if m else (None, text.strip())


def _role(name: str, text: str, page: Page) -> str:
    book = page.book
    if name == "eval":
        if text not in page.values:
            raise page.fail("an {eval} whose value was not recorded", text)
        return page.values[text]
    if name == "math":
        return f"${text}$"
    if name == "eq":
        shown, label = _split_ref(text)
        number, url = _equation(label, page)
        return f"[{shown or f'({number})'}]({url})"
    if name in ("ref", "numref"):
        shown, label = _split_ref(text)
        if label not in book.labels:
            raise page.fail(f"a {{{name}}} to a label that no page defines", label)
        docname, kind, info = book.labels[label]
        anchor = f"equation-{make_id(label)}" if kind == "eq" else make_id(label)
        if name == "numref":
            if kind == "section":
                raise page.fail("a {numref} to a section (sections are not numbered)", text)
            kind_name = {"eq": "Equation", "exercise": "Exercise"}[kind]
            shown = (shown.replace("{number}", info).replace("%s", info) if shown
                     else f"{kind_name} {info}")
        elif not shown:
            if kind == "section" and not info:
                raise page.fail("a {ref} without text to a label that is not on a heading",
                                text)
            shown = info if kind == "section" else f"Exercise {info}" if kind == "exercise" \
                else f"({info})"
        return f"[{shown}]({book.page(docname, anchor)})"
    if name == "doc":
        shown, target = _split_ref(text)
        docname = _resolve_doc(target, page)
        return f"[{shown or book.titles.get(docname, docname)}]({book.page(docname)})"
    if name in ("cite", "cite:p", "cite:t"):
        keys = [k.strip() for k in text.split(",") if k.strip()]
        refs = []
        for key in keys:
            if key not in book.citations:
                raise page.fail("a citation key that references.bib does not have", key)
            refs.append((book.citations[key], book.page("references", make_id(f"cite-{key}"))))
        if name == "cite:t":
            return ", ".join(f"[{_textual(who)}]({url})" for who, url in refs)
        return "(" + "; ".join(f"[{who}]({url})" for who, url in refs) + ")"
    raise page.fail(f"the role {{{name}}} has no plain form", f"{{{name}}}`{text}`")


def _textual(who: str) -> str:
    """"Vaswani et al., 2017" as the subject of a sentence: "Vaswani et al. (2017)"."""
    return re.sub(r", (\d{4}\w?)$", r" (\1)", who)


def _resolve_doc(target: str, page: Page) -> str:
    target = re.sub(r"\.(md|ipynb)$", "", target)
    if target.startswith("/"):
        docname = target.lstrip("/")
    else:
        base = Path(page.docname).parent
        docname = (base / target).as_posix()
        parts: list[str] = []
        for part in docname.split("/"):
            if part == "..":
                if not parts:
                    raise page.fail("a link out of the book", target)
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        docname = "/".join(parts)
    if docname not in {d for d, _ in toc_entries(page.book.root)}:
        raise page.fail("a link to a page that _toc.yml does not list", target)
    return docname


def _link(text: str, url: str, page: Page) -> str:
    if re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("#"):
        return f"[{text}]({url})"
    path, _, anchor = url.partition("#")
    if path.endswith(".ipynb") and "/" not in path:
        return f"[{text}]({url})"  # the plain copy of the chapter beside this one
    if path.endswith((".md", ".ipynb")):
        return f"[{text}]({page.book.page(_resolve_doc(path, page), anchor)})"
    return f"[{text}]({url})"


# -------------------------------------------------------------------------------- code


def _code_tree(source: str) -> ast.Module:
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


PURE_METHODS = {"sum", "max", "min", "mean", "std", "var", "round", "astype", "copy", "item",
                "tolist", "reshape", "any", "all", "argmax", "argmin", "format", "join",
                "split", "strip", "replace", "keys", "values", "items", "get", "index",
                "count", "startswith", "endswith", "upper", "lower", "prod", "cumsum",
                "nonzero", "ravel", "flatten", "squeeze", "transpose", "dot", "clip"}


def _touched(source: str, modules: set[str]) -> set[str]:
    """Names a cell binds, or may change (method calls, item and attribute assignment).

    A module's functions (``al.softmax(x)``) are taken to change no variable."""
    tree = _code_tree(source)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names |= set(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr not in PURE_METHODS:
            root = node.func.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id not in modules:
                names.add(root.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                root = target
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                if isinstance(root, ast.Name):
                    names.add(root.id)
    return names


def _modules(cells: list[dict]) -> set[str]:
    """Names bound by imports anywhere: calling a module's function changes no variable."""
    names = set()
    for cell in cells:
        if cell["cell_type"] == "code":
            for node in ast.walk(_code_tree("".join(cell["source"]))):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _reads(source: str) -> set[str]:
    return {n.id for n in ast.walk(_code_tree(source))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def is_prose_formatting(cell: dict) -> bool:
    tags = set(cell.get("metadata", {}).get("tags", []))
    return cell["cell_type"] == "code" and {"remove-input", "remove-output"} <= tags


def droppable_cells(cells: list[dict]) -> set[int]:
    """Indices of the prose-formatting cells that nothing after them needs."""
    modules = _modules(cells)
    dropped: set[int] = set()
    needed: set[str] = set()  # names read by the kept cells after the current one
    for i in range(len(cells) - 1, -1, -1):
        cell = cells[i]
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if is_prose_formatting(cell) and not (_touched(source, modules) & needed):
            dropped.add(i)
            continue
        needed |= _reads(source)
    return dropped


# ---------------------------------------------------------------------------- notebook


def eval_names(text: str) -> list[str]:
    return [m.group(2) for m in ROLE.finditer(text) if m.group(1) == "eval"]


def _cell_key(cell: dict, index: int) -> str:
    return cell.get("id") or f"cell-{index}"


def plain_notebook(chapter: dict, docname: str, values: dict[str, dict[str, str]],
                   book: Book) -> dict:
    """The plain copy of one chapter; ``values[cell id][name]`` fills its ``{eval}``s."""
    cells = chapter["cells"]
    dropped = droppable_cells(cells)
    out_cells = []
    recorded: dict[str, dict[str, str]] = {}
    page = Page(book=book, docname=docname, values={})
    for i, cell in enumerate(cells):
        if i in dropped:
            continue
        new = copy.deepcopy(cell)
        meta = new.setdefault("metadata", {})
        tags = [t for t in meta.get("tags", []) if t not in DROPPED_TAGS]
        if tags:
            meta["tags"] = tags
        else:
            meta.pop("tags", None)
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            names = eval_names(text)
            key = _cell_key(cell, i)
            if names:
                have = values.get(key, {})
                missing = [n for n in names if n not in have]
                if missing:
                    raise page.fail(f"no recorded value for {missing} (run the generator "
                                    "without --keep-values)", text)
                recorded[key] = {n: have[n] for n in dict.fromkeys(names)}
            page.values = recorded.get(key, {})
            continued = page.solution and not re.search(r"\{solution-(start|end)\}", text)
            plain = convert_markdown(text, page)
            if continued and plain.strip():
                plain = _tidy("\n".join(_details(f"{page.solution} (continued)",
                                                  plain.splitlines(), page)))
            if not plain.strip():
                continue  # only a solution's end, a target
            new["source"] = plain.splitlines(keepends=True)
        else:
            if is_prose_formatting(cell):
                meta.setdefault("jupyter", {})["source_hidden"] = True
            if meta.get("jupyter", {}).get("source_hidden"):
                meta["cellView"] = "form"  # Colab's "hide code"
        out_cells.append(new)
    nb = {key: copy.deepcopy(value) for key, value in chapter.items() if key != "cells"}
    nb["cells"] = out_cells
    nb["metadata"] = dict(nb.get("metadata", {}))
    nb["metadata"].pop("widgets", None)  # no widget state: the copies show no widget
    nb["metadata"]["plain_notebook"] = {
        "source": f"{docname}.ipynb", "website": book.page(docname), "eval": recorded}
    return nb


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def recorded_values(path: Path) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    nb = json.loads(path.read_text(encoding="utf-8"))
    return nb.get("metadata", {}).get("plain_notebook", {}).get("eval", {})


def _probe(names: list[str]) -> str:
    pairs = ", ".join(f"{json.dumps(n)}: {n}" for n in dict.fromkeys(names))
    return (f"print({PROBE!r} + __import__('json').dumps({{k: [type(v).__name__, v if "
            f"isinstance(v, (str, int, float)) else repr(v)] for k, v in {{{pairs}}}.items()}}))")


def execute_values(path: Path, timeout: int = 900) -> dict[str, dict[str, str]]:
    """Run the chapter with a probe before each markdown cell that quotes names."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from kernel_replies import wait_in_slices

    wait_in_slices()  # a slider cell's reply can otherwise wait out the whole timeout

    nb = nbformat.read(path, as_version=4)
    probes: list[str] = []
    run_cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and eval_names(cell.source):
            run_cells.append(nbformat.v4.new_code_cell(_probe(eval_names(cell.source))))
            probes.append(_cell_key(cell, i))
        elif cell.cell_type == "code":
            run_cells.append(copy.deepcopy(cell))
    run = nbformat.v4.new_notebook(cells=run_cells, metadata=nb.metadata)
    try:
        NotebookClient(run, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except CellExecutionError as error:
        raise PlainError(f"{path.name} does not run (a quoted name must be assigned "
                         f"before the cell that quotes it):\n{error}") from error
    found = []
    for cell in run.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            for line in text.splitlines():
                if line.startswith(PROBE):
                    found.append(json.loads(line[len(PROBE):]))
    if len(found) != len(probes):
        raise PlainError(f"{path.name}: {len(probes)} probes ran, {len(found)} answered")
    values = {}
    for key, answer in zip(probes, found, strict=True):
        values[key] = {}
        for name, (kind, value) in answer.items():
            if kind == "str":
                values[key][name] = value
            elif kind in ("int", "float"):
                values[key][name] = repr(value)
            else:
                raise PlainError(f"{path.name}: {{eval}}`{name}` is a {kind}, not a str "
                                 f"({value})")
    return values


def chapters(root: Path = ROOT) -> list[tuple[str, Path]]:
    return [(d, root / f"{d}.ipynb") for d, _ in toc_entries(root)
            if (root / f"{d}.ipynb").exists()]


def target_path(docname: str, root: Path = ROOT) -> Path:
    return root / OUT_DIR / f"{Path(docname).name}.ipynb"


def render(docname: str, path: Path, values: dict, book: Book) -> str:
    chapter = json.loads(path.read_text(encoding="utf-8"))
    return dumps(plain_notebook(chapter, docname, values, book))


def main(argv: list[str], root: Path = ROOT) -> int:
    check = "--check" in argv
    keep = check or "--keep-values" in argv
    wanted = {Path(a).resolve() for a in argv if not a.startswith("--")}
    book = load_book(root)
    stale = []
    for docname, path in chapters(root):
        if wanted and path.resolve() not in wanted:
            continue
        target = target_path(docname, root)
        if keep:
            values = recorded_values(target)
        else:
            print(f"executing {path.relative_to(root)}", flush=True)
            values = execute_values(path)
        text = render(docname, path, values, book)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if text == current:
            continue
        if check:
            stale.append(target.relative_to(root))
            continue
        target.parent.mkdir(exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(root)}")
    if check:
        known = {target_path(d, root) for d, _ in chapters(root)}
        extra = [p for p in (root / OUT_DIR).glob("*.ipynb") if p not in known]
        for p in stale:
            print(f"{p} is stale (python tools/plain_notebooks.py)")
        for p in extra:
            print(f"{p.relative_to(root)} has no chapter")
        return 1 if stale or extra else 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlainError as error:
        sys.exit(f"plain_notebooks: {error}")
