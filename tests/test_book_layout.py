"""The book's structure: every chapter notebook is in the table of contents and vice versa,
and every notebook is stored with outputs, so nbval over chapters/ checks the whole book."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
from pathlib import Path

import pytest
import yaml
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def toc_files() -> list[str]:
    text = (ROOT / "_toc.yml").read_text()
    return re.findall(r"^\s*-?\s*file:\s*(\S+)\s*$", text, flags=re.M)


def chapter_notebooks() -> list[Path]:
    return sorted((ROOT / "chapters").glob("*.ipynb"))


def test_toc_lists_exactly_the_chapter_notebooks():
    listed = {f for f in toc_files() if f.startswith("chapters/")}
    on_disk = {f"chapters/{p.stem}" for p in chapter_notebooks()}
    assert on_disk, "no chapter notebooks found"
    assert listed == on_disk, (
        f"only in _toc.yml: {listed - on_disk}; only on disk: {on_disk - listed}")


def test_every_toc_entry_exists():
    for entry in toc_files():
        matches = list(ROOT.glob(f"{entry}.*"))
        assert matches, f"_toc.yml lists {entry!r}, which does not exist"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_is_stored_executed_without_errors(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} are stored without being run"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: stored error outputs {[e.get('ename') for e in errors]}"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_follows_the_page_skeleton(path: Path):
    nb = json.loads(path.read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert markdown.lstrip().startswith("# "), f"{path.name} must start with a title"
    for heading in ("What you will learn", "Key takeaways", "Exercises"):
        assert heading in markdown, f"{path.name} has no '{heading}' section"
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "sys.path" not in code, f"{path.name} edits sys.path; attention_lib is installed"
    assert re.search(r"default_rng\(\d+\)", code), f"{path.name} has no fixed seed"
    assert re.match(r"\d\d_[a-z0-9_]+\.ipynb$", path.name), f"{path.name} is not NN_verb_phrase"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_first_code_cell_installs_the_library_on_colab(path: Path):
    colab = load_script("colab_cell")
    nb = json.loads(path.read_text())
    assert colab.is_current(nb), (
        f"{path.name}: the first code cell is not the current Colab cell "
        "(run `python tools/colab_cell.py`)")
    source = "".join(colab.first_code_cell(nb)["source"])
    assert colab.site_url() + '"' in source and colab.wheel_name() + '"' in source
    assert 'if "google.colab" in sys.modules or "ATTENTION_BOOK_SITE" in os.environ:' in source
    assert "git+" not in source  # no install from a git tag


def test_colab_cell_follows_the_configured_site(tmp_path: Path):
    colab = load_script("colab_cell")
    (tmp_path / "_config.yml").write_text(
        "title: x\nrepository:\n  url: https://github.com/Fork-Org/book\n  branch: main\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x-lib"\nversion = "9.8.7"\n')
    source = colab.cell_source(tmp_path)
    assert '"https://fork-org.github.io/book/"' in source
    assert '/wheels/x_lib-9.8.7-py3-none-any.whl"' in source
    (tmp_path / "_config.yml").write_text(
        "title: x\nhtml:\n  baseurl: https://book.example.org/attention\n")
    assert '"https://book.example.org/attention/"' in colab.cell_source(tmp_path)
    compile(source, "colab-cell", "exec")  # plain Python, no IPython magics


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_runs_without_the_book_build_tools(path: Path):
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for tool in ("myst_nb", "sphinx", "jupyter_book", "nbval", "pytest"):
        assert not re.search(rf"^\s*(import|from)\s+{tool}\b", code, re.M), (
            f"{path.name} imports {tool}, which Colab and Binder do not have")
    assert "__file__" not in code, (
        f"{path.name} finds files through __file__; read data through a library function")


def _code_tree(source: str) -> ast.Module:
    """The cell's code, without IPython's magic and shell lines."""
    lines = [line for line in source.splitlines()
             if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


def _assigned_names(source: str) -> set[str]:
    return {n.id for n in ast.walk(_code_tree(source))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_prose_numbers_are_eval_of_names_the_code_assigns(path: Path):
    nb = json.loads(path.read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "{glue" not in markdown, f"{path.name} still uses glue roles"
    for expr in re.findall(r"\{eval\}`([^`]*)`", markdown):
        # myst-nb evaluates only bare names on the website; jupyterlab-myst shows a str as is.
        assert re.fullmatch(r"[A-Za-z_]\w*", expr), f"{path.name}: {{eval}}`{expr}` is not a name"
        assert expr in _assigned_names(code), (
            f"{path.name}: {{eval}}`{expr}` is quoted but never assigned")
    # The role is evaluated when its markdown cell is reached (Run All, or the website's
    # inline execution), so the name must be assigned in an earlier code cell.
    assigned: set[str] = set()
    for i, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            assigned |= _assigned_names(text)
        else:
            early = set(re.findall(r"\{eval\}`(\w+)`", text)) - assigned
            assert not early, f"{path.name}: cell {i} quotes {early} before a code cell assigns it"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_hidden_cells_still_run_on_the_website(path: Path):
    # The website executes notebooks inline and never runs a `remove-cell` cell, so a
    # cell that computes prose numbers is hidden with remove-input + remove-output.
    nb = json.loads(path.read_text())
    removed = [c.get("id") for c in nb["cells"] if c["cell_type"] == "code"
               and "remove-cell" in c.get("metadata", {}).get("tags", [])]
    assert removed == ["colab-install"], f"{path.name}: cells tagged remove-cell: {removed}"


# Calls that measure the machine: time and memory. A number derived from one of them
# changes from run to run and from CPU to CPU, so the prose never quotes it.
MEASURING_CALL = re.compile(
    r"(^|\.)(best_time|perf_counter(_ns)?|monotonic(_ns)?|process_time(_ns)?|timeit|"
    r"repeat|time|get_traced_memory|get_tracemalloc_memory|take_snapshot)$")


MUTATING_METHODS = {"append", "extend", "update", "add", "insert", "setdefault", "fill"}


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def measured_names_at_each_cell(cells: list[dict]) -> list[set[str]]:
    """For each cell, the names that hold a measurement (or depend on one) before it runs.

    Statement by statement: a top-level statement that calls a measuring function, or
    reads a name that holds a measurement, makes every name it binds or mutates (the
    object of a method call or an item assignment) hold a measurement; a statement that
    does neither rebinds its names clean.
    """
    measured: set[str] = set()
    before: list[set[str]] = []
    for cell in cells:
        before.append(set(measured))
        if cell["cell_type"] != "code":
            continue
        for stmt in _code_tree("".join(cell["source"])).body:
            nodes = list(ast.walk(stmt))
            # A loop or comprehension variable read inside its own statement is that
            # statement's value, not whatever the name held before.
            loop_vars = {n.id for node in nodes if isinstance(node, (ast.For, ast.comprehension))
                         for n in ast.walk(node.target) if isinstance(n, ast.Name)}
            reads = {n.id for n in nodes if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load)} - loop_vars
            measures = any(isinstance(n, ast.Call) and MEASURING_CALL.search(_dotted(n.func))
                           for n in nodes)
            binds = {n.id for n in nodes
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            binds |= {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            mutated = {_root_name(n.func.value) for n in nodes
                       if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                       and n.func.attr in MUTATING_METHODS}
            mutated |= {_root_name(t) for n in nodes if isinstance(n, (ast.Assign, ast.AugAssign))
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                        if isinstance(t, (ast.Subscript, ast.Attribute))}
            if measures or reads & measured:
                measured |= binds | (mutated - {None})
            else:
                measured -= binds
    return before


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_prose_never_quotes_a_number_measured_at_build_time(path: Path):
    # Timings and memory peaks measured while the book builds depend on the machine and
    # its load; the prose quotes only stored benchmark results and computed quantities.
    nb = json.loads(path.read_text())
    before = measured_names_at_each_cell(nb["cells"])
    for i, (cell, measured) in enumerate(zip(nb["cells"], before, strict=True)):
        if cell["cell_type"] == "markdown":
            quoted = set(re.findall(r"\{eval\}`(\w+)`", "".join(cell["source"])))
            assert not quoted & measured, (
                f"{path.name}: cell {i} quotes {sorted(quoted & measured)}, which rest on a "
                "measurement made at build time; quote the stored benchmark instead")


def test_the_measurement_tracking_sees_through_code():
    def cells(*sources):
        return [{"cell_type": "code", "source": s} for s in sources] + [
            {"cell_type": "markdown", "source": ""}]

    last = measured_names_at_each_cell(cells(
        "t = al.best_time(f)\nd = 64",
        "peak = []\nfor n in sizes:\n    tracemalloc.start()\n"
        "    peak.append(tracemalloc.get_traced_memory()[1])",
        "ratio_txt = format(t / 2, '.1f')\nsize_txt = str(d)",
        "stored = al.stored_benchmark()\nms_txt = format(stored['t'], '.0f')",
        "t = 3.0",
    ))[-1]
    assert {"ratio_txt", "peak", "n"} <= last
    assert not {"d", "size_txt", "stored", "ms_txt", "t"} & last


def test_search_titles_become_plain_text():
    spec = importlib.util.spec_from_file_location(
        "plain_search_titles", ROOT / "_ext" / "plain_search_titles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.plain_title(r"Memory: measured as \(n\) grows") == "Memory: measured as n grows"
    assert module.plain_title(r"Scale by \(\sqrt{d_k}\)") == "Scale by √d_k"
    assert module.plain_title(r"\(Q K^{\mathsf T}\) and \(n \times n\)") == "Q K^T and n × n"
    assert module.plain_title("no maths here") == "no maths here"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_a_cell_that_measures_is_not_compared(path: Path):
    # A cell that times or measures memory prints a different number on every run and
    # every CPU: nbval must not compare its output (and the prose must not quote it).
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        calls = [_dotted(n.func) for n in ast.walk(_code_tree("".join(cell["source"])))
                 if isinstance(n, ast.Call)]
        if any(MEASURING_CALL.search(c) for c in calls):
            tags = cell.get("metadata", {}).get("tags", [])
            assert "nbval-ignore-output" in tags, (
                f"{path.name}: cell {i} measures the machine but its output is compared")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_prose_bookkeeping_stays_out_of_sight(path: Path):
    # Names formatted for the prose (`*_txt`) are made in hidden cells (remove-input):
    # a cell the reader sees computes the lesson, not the page's sentences.
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] != "code" or "remove-input" in tags or "remove-cell" in tags:
            continue
        tree = _code_tree("".join(cell["source"]))
        made = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                       and isinstance(n.ctx, ast.Store) and n.id.endswith("_txt")}
                      | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                         and n.id == "for_prose"})
        assert not made, f"{path.name}: visible cell {i} makes prose names {made}"


def test_the_api_page_documents_every_public_name():
    import importlib

    documented = set(re.findall(r"\.\. auto(?:function|class|data):: (\S+)",
                                "".join((ROOT / page).read_text()
                                        for page in ("api.md", "api_models.md"))))
    # a name is documented when a documented path (in full, or bare under currentmodule
    # attention_lib) resolves to that very object; a function of the same name in another
    # module cannot stand in for it
    modules = ("attention_lib", "attention_lib.plotting", "attention_lib.controls",
               "attention_lib.training")
    skip = {"examples", "gpt", "plotting", "training", "BOOK_RC"}  # modules and data
    top = importlib.import_module("attention_lib")

    def resolve(path: str) -> object:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module) if module else top, name, None)

    objects = [resolve(path) for path in documented]

    def found(m: str, n: str) -> bool:
        obj = getattr(importlib.import_module(m), n)
        return any(o is obj for o in objects)

    missing = [f"{m}.{n}" for m in modules for n in importlib.import_module(m).__all__
               if n not in skip and not found(m, n)]
    assert not missing, f"api.md and api_models.md do not document {missing}"


def _stream_text(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_every_exercise_has_a_readers_cell_and_a_hidden_solution(path: Path):
    # The reader's cell runs as stored and says "not answered yet"; the solution sits
    # behind a click (a gated dropdown) and its code checks itself: "correct".
    # An exercise names its tier ("Predict", "Implement" or "Challenge"). The reader's cell
    # either holds an answer (`answer = None` ... `check_answer(answer, ...)`) or, in an
    # Implement exercise (and a Challenge may do the same), a function of theirs whose body
    # raises NotImplementedError, checked by `check_implementation(fn, "<task>")`.
    cells = json.loads(path.read_text())["cells"]
    labels = []
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        found = re.search(r"[`:]{3}\{exercise\}([^\n]*)\n:label: (\S+)", text)
        if cell["cell_type"] != "markdown" or not found:
            continue
        tier, label = found.group(1).strip(), found.group(2)
        labels.append(label)
        assert tier in EXERCISE_TIERS, f"{path.name}: {label}'s tier is {tier!r}"
        reader = cells[i + 1]
        src = "".join(reader["source"])
        assert reader["cell_type"] == "code", (
            f"{path.name}: {label} is not followed by the reader's cell")
        if "check_implementation(" in src:
            assert tier != "Predict", f"{path.name}: {label} asks for code under 'Predict'"
            assert re.match(r"(#[^\n]*\n)*def \w+\(", src.lstrip()), (
                f"{path.name}: {label}'s cell does not start with the reader's function")
            assert "raise NotImplementedError" in src, (
                f"{path.name}: {label}'s function is already written")
        else:
            assert tier != "Implement", f"{path.name}: {label} checks no function"
            assert src.lstrip().startswith("answer = None"), (
                f"{path.name}: {label} is not followed by the reader's cell")
            assert "check_answer(answer" in src, f"{path.name}: {label}'s cell checks no answer"
        assert _stream_text(reader).strip().endswith("not answered yet"), (
            f"{path.name}: {label}'s reader cell does not say 'not answered yet'")
        start = cells[i + 2]
        head = "".join(start["source"])
        assert start["cell_type"] == "markdown" and re.match(
            rf"```\{{solution-start\}} {re.escape(label)}\n:class: dropdown\n```", head), (
            f"{path.name}: {label} has no gated dropdown solution right after its cell")
        end = next(j for j in range(i + 3, len(cells))
                   if "{solution-end}" in "".join(cells[j]["source"]))
        # the solution closes before the next exercise opens (or the book build stops)
        assert not any(re.search(r"[`:]{3}\{exercise\}", "".join(cells[j]["source"]).split(
            "{solution-end}")[0]) for j in range(i + 2, end + 1)), (
            f"{path.name}: {label}'s solution is not closed before the next exercise")
        code = [c for c in cells[i + 3:end] if c["cell_type"] == "code"]
        assert code, f"{path.name}: {label}'s solution has no code"
        assert re.search(r"check_(answer|implementation)\(", "".join(code[-1]["source"])), (
            f"{path.name}: {label}'s solution does not check itself")
        assert _stream_text(code[-1]).strip().endswith("correct"), (
            f"{path.name}: {label}'s solution does not print 'correct'")
    assert len(labels) >= 2, f"{path.name}: {len(labels)} exercises"


EXERCISE_TIERS = ("Predict", "Implement", "Challenge")


def _parts() -> list[tuple[str, list[str]]]:
    """(caption, chapter files) of each part of _toc.yml, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [(p["caption"], [c["file"] for c in p["chapters"]]) for p in toc["parts"]]


def test_every_chapter_of_the_first_three_parts_asks_for_code():
    parts = [files for caption, files in _parts() if re.match(r"Part (I|II|III):", caption)]
    assert len(parts) == 3
    missing = []
    for files in parts:
        for name in files:
            cells = json.loads((ROOT / f"{name}.ipynb").read_text())["cells"]
            text = "\n".join("".join(c["source"]) for c in cells)
            if not re.search(r"\{exercise\} Implement\n:label:", text) or \
                    "check_implementation(" not in text:
                missing.append(name)
    assert not missing, f"no Implement exercise in {missing}"


def _lab_visibility():
    return load_script("lab_visibility")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_jupyterlab_collapses_what_the_website_hides(path: Path):
    # `python tools/lab_visibility.py` writes these flags from the tags and solutions.
    cells = json.loads(path.read_text())["cells"]
    wanted = _lab_visibility().expected_flags(cells)
    for i, (cell, want) in enumerate(zip(cells, wanted, strict=True)):
        have = {k: v for k, v in cell.get("metadata", {}).get("jupyter", {}).items()
                if k in ("source_hidden", "outputs_hidden")}
        assert have == want, (f"{path.name}: cell {i} has {have}, expected {want}; "
                              "run python tools/lab_visibility.py")


def test_a_solutions_code_is_collapsed_with_its_output():
    md = lambda s: {"cell_type": "markdown", "source": s}  # noqa: E731
    code = lambda tags=(): {"cell_type": "code", "source": "x = 1",  # noqa: E731
                            "metadata": {"tags": list(tags)}}
    flags = _lab_visibility().expected_flags([
        code(), md("```{solution-start} ex\n:class: dropdown\n```"), code(),
        md("```{solution-end}\n```"),
        code(["hide-input"]), code(["hide-cell"]), code(["remove-input", "remove-output"])])
    both = {"source_hidden": True, "outputs_hidden": True}
    assert flags == [{}, {}, both, {}, {"source_hidden": True}, both, {"source_hidden": True}]


def _alt_pattern(template: str) -> re.Pattern:
    """The alt text a template gives, whatever its names hold (each a non-empty str)."""
    parts = load_script("execute_notebooks").EVAL_ROLE.split(template)
    # split() alternates literal text and names: keep the text, let each name be anything
    return re.compile("".join(re.escape(p) if i % 2 == 0 else ".+?"
                              for i, p in enumerate(parts)) + r"\Z", re.S)


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_alt_text_numbers_come_from_names_the_code_assigns(path: Path):
    # A figure whose alt text quotes numbers keeps it as a template of {eval} roles
    # (metadata image_alt_eval); tools/execute_notebooks.py fills in mystnb.image.alt.
    tool = load_script("execute_notebooks")
    cells = json.loads(path.read_text())["cells"]
    assigned: set[str] = set()
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            assigned |= _assigned_names("".join(cell["source"]))
        template = cell.get("metadata", {}).get(tool.ALT_TEMPLATE)
        if template is None:
            continue
        names = set(tool.EVAL_ROLE.findall(template))
        assert names, f"{path.name}: cell {i} has an alt template without a name"
        assert names <= assigned, (
            f"{path.name}: cell {i}'s alt text quotes {sorted(names - assigned)}, "
            "not assigned by this cell or an earlier one")
        alt = cell["metadata"].get("mystnb", {}).get("image", {}).get("alt", "")
        assert "{eval}" not in alt and _alt_pattern(template).match(alt), (
            f"{path.name}: cell {i}'s alt text is not its template filled in; "
            "run python tools/execute_notebooks.py on the notebook")


def test_alt_text_templates_are_filled_from_the_values():
    tool = load_script("execute_notebooks")
    template = "bars from {eval}`lo_txt` to {eval}`hi_txt`, not {eval}`lo_txt`"
    cells = [{"cell_type": "code", "metadata": {tool.ALT_TEMPLATE: template}},
             {"cell_type": "code", "metadata": {"mystnb": {"image": {"alt": "typed"}}}}]
    assert tool.alt_names(cells) == ["lo_txt", "hi_txt"]
    assert tool.fill_alt_texts(cells, {"lo_txt": "0.45", "hi_txt": "1.09"}) == 1
    assert cells[0]["metadata"]["mystnb"]["image"]["alt"] == "bars from 0.45 to 1.09, not 0.45"
    assert cells[1]["metadata"]["mystnb"]["image"]["alt"] == "typed"
    pattern = _alt_pattern(template)
    assert pattern.match("bars from 0.45 to 1.09, not 0.45")
    assert not pattern.match("bars from 0.6 to 1.3")  # typed by hand, not from the template


def _machine_names(code: str) -> set[str]:
    """Names that hold al.benchmark_machine(...)'s line, directly or through another name."""
    names: set[str] = set()
    for stmt in _code_tree(code).body:
        if not isinstance(stmt, ast.Assign):
            continue
        value = stmt.value
        is_machine = ((isinstance(value, ast.Call)
                       and _dotted(value.func).endswith("benchmark_machine"))
                      or (isinstance(value, ast.Name) and value.id in names))
        if is_machine:
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_the_benchmark_machine_is_named_once_in_a_footnote(path: Path):
    # A chapter that quotes stored benchmark results names the machine they come from,
    # once, in a footnote: the long line (CPU, SIMD level, BLAS kernels, date) stays out
    # of the sentences.
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    if "stored_benchmark(" not in code:
        return
    names = _machine_names(code)
    assert names, f"{path.name} quotes the stored benchmark but never names its machine"
    quotes = [line for c in nb["cells"] if c["cell_type"] == "markdown"
              for line in "".join(c["source"]).splitlines()
              for name in re.findall(r"\{eval\}`(\w+)`", line) if name in names]
    assert len(quotes) == 1, f"{path.name} names the benchmark machine {len(quotes)} times"
    assert re.match(r"\[\^[\w-]+\]:", quotes[0]), (
        f"{path.name} names the benchmark machine outside a footnote: {quotes[0]!r}")


def test_machine_names_follow_assignments():
    code = ("line = al.benchmark_machine(bench)\nmachine_txt = line\nother_txt = 'x'\n"
            "cpu_txt = al.benchmark_machine()")
    assert _machine_names(code) == {"line", "machine_txt", "cpu_txt"}


READING = load_script("reading_time")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_chapter_opens_with_its_reading_time_and_what_it_needs(path: Path):
    """The opening line states the reading time tools/reading_time.py computes (main text at
    200 words a minute, half a minute per shown code cell, rounded up to 5 minutes) and says
    what the chapter needs."""
    nb = json.loads(path.read_text())
    opening = "".join(nb["cells"][0]["source"]).split("\n\n")[1]
    assert opening.startswith("*Reading time: about "), f"{path.name}: {opening[:60]!r}"
    assert "You need" in opening, f"{path.name} does not say what it needs: {opening!r}"
    assert READING.stated_minutes(nb) == READING.reading_minutes(nb), (
        f"{path.name} states {READING.stated_minutes(nb)} minutes, its text takes "
        f"{READING.reading_minutes(nb)}: python tools/reading_time.py --write")


def test_reading_time_counts_the_main_text_only():
    """Dropdowns and solutions are left out, a formula is one word, a link its text."""
    cells = [{"cell_type": "markdown", "source": [
        "# Title\n\nOne two [three](x.ipynb) $a^2 + b^2$.\n\n",
        ":::{admonition} Going deeper: aside\n:class: dropdown tip\nfour five six\n:::\n\n",
        ":::{admonition} Shown\n:class: tip\nseven\n:::\n\n",
        "```{exercise}\n:label: ex\neight\n```\n\n```{solution-start} ex\n:class: dropdown\n```\n",
        "hidden words here\n"]},
        {"cell_type": "code", "metadata": {}, "source": ["answer = 1\n"]},
        {"cell_type": "markdown", "source": ["more hidden\n```{solution-end}\n```\nnine ten\n"]},
        {"cell_type": "code", "metadata": {"tags": ["hide-input"]}, "source": ["plot()\n"]},
        {"cell_type": "code", "metadata": {}, "source": ["shown = 2\n"]}]
    nb = {"cells": cells}
    assert READING.main_text(nb).split() == ["#", "Title", "One", "two", "[three](x.ipynb)",
                                             "$a^2", "+", "b^2$.", "seven", "eight", "nine",
                                             "ten"]
    assert READING.count_words(READING.main_text(nb)) == 9  # the formula is one word
    assert READING.shown_code_cells(nb) == 1  # the solution's and the hidden cell are not
    assert READING.reading_minutes(nb) == 5


def test_the_landing_page_names_a_fast_track_and_the_full_path():
    """The fast track takes at most 3 hours; both totals are the chapters' stated times."""
    intro = (ROOT / "intro.md").read_text()
    minutes = {p.name[:2]: READING.stated_minutes(json.loads(p.read_text()))
               for p in chapter_notebooks()}
    fast = re.search(r"\*\*The fast track, about (\d+) minutes:\*\*(.*?)\n- ", intro, re.S)
    full = re.search(r"\*\*The full path, about (\d+) minutes:\*\* all (\d+) chapters", intro)
    assert fast and full
    chapters = re.findall(r"\]\(chapters/(\d\d)_", fast.group(2))
    assert len(chapters) >= 5
    assert int(fast.group(1)) == sum(minutes[c] for c in chapters) <= 180
    assert int(full.group(1)) == sum(minutes.values())
    assert int(full.group(2)) == len(minutes)


MAIN_WORDS_LIMIT = 2500


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_a_chapters_main_text_stays_under_the_limit(path: Path):
    """What a reader reads straight through, Markdown outside dropdowns and solutions, stays
    under 2,500 words; side trips go into "Going deeper" dropdowns."""
    words = READING.count_words(READING.main_text(json.loads(path.read_text())))
    assert words <= MAIN_WORDS_LIMIT, (
        f"{path.name}: {words} words of main text (limit {MAIN_WORDS_LIMIT})")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_a_chapter_needs_only_earlier_chapters(path: Path):
    """The chapters its opening line names come before it in the book."""
    nb = json.loads(path.read_text())
    opening = "".join(nb["cells"][0]["source"]).split("\n\n")[1]
    needed = [int(n) for n in re.findall(r"\]\((\d\d)_[a-z_]+\.ipynb\)", opening)]
    assert all(n < int(path.name[:2]) for n in needed), f"{path.name} needs {needed}"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_no_chapter_audits_the_source_texts_in_a_box(path: Path):
    """The source texts' claims are audited on one appendix page; a chapter links there."""
    text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "markdown")
    assert not re.search(r"\{admonition\}\s*Source check", text), (
        f"{path.name} has a source-check box; the claim belongs in source_audit.md")
