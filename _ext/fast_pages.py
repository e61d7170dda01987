"""Sphinx extension: pages that load fast on a phone, and look as they did.

What a reader's phone used to download and run on every page, and what it gets now:

- Maths: MathJax (1.1 MB) typeset every equation in the browser, on the main thread.
  Now MathJax runs at build time, in node (``_ext/render_math.js``, the npm package
  ``mathjax-full``, the same MathJax version and CommonHTML output, installed into
  ``_build/node`` by ``make book``): each page carries the typeset markup with its
  assistive MathML, the CSS of the glyphs it uses and links to MathJax's web fonts
  (copied into ``_static/mathjax-fonts``), and no TeX parser.
- Icons: the theme's Font Awesome script (1.45 MB) replaced each ``<i class="fa-...">``
  by an inline SVG in the browser. The same SVGs, taken from that script, are written
  into the pages at build time, with Font Awesome's own CSS for them; the script is
  not loaded.
- Scripts: every script file is deferred (none blocks the first paint);
  ``documentation_options.js``, which inline scripts extend at once, is inlined.
  Sphinx's search scripts and index load only on the search page (the search field
  of the other pages opens it); the notebooks' widget state (a widget needs a kernel,
  the website shows each explorer's static version) is not embedded.
- Figures: each ``<img>`` gets its intrinsic ``width``/``height`` (no layout shift)
  and ``loading="lazy"``: none is fetched before the first screen of text is shown
  (a chapter's first figure is below it on a phone), each as the reader nears it.
- Layout: the theme's script measured every code block and output at load to decide
  which need a tab stop, which laid out the whole page, sections the browser would
  have skipped (``content-visibility: auto``) included; it now measures each box when
  it nears the screen (``_ext/lazy_tab_stops.js``, appended to the theme's script).
- Stylesheets: a page's dozen local stylesheets become one file (fewer round trips
  before the first paint), without Font Awesome's rules for ``<i>`` icons; its fonts
  are cut to the characters the remaining CSS draws (admonition and toggle icons).
  Of the 460 kB of rules (70 kB compressed, mostly Bootstrap's components), the file
  keeps those a page or script of the site can use (PurgeCSS, ``_ext/purge_css.js``):
  about 190 kB (35 kB compressed), which a phone fetches before it shows anything.
- A meta description (the page's first paragraph) for search engines.
- Data that a control needs only when the reader starts it (the text generator's weights,
  a ``<script type="application/octet-stream" class="lc-blob">`` of base64 in the notebook's
  output) moves into a file of its own under ``_static/blobs/``, named by its hash; the
  element keeps its address (``data-src``) and the control fetches it when it starts.

Pages are rewritten after the build, once each: a page that Sphinx did not write
again keeps its processed form. A page whose maths cannot be rendered (node or the
npm package missing, a TeX error) is a build warning, an error under ``-W``.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

from plain_search_titles import tex_to_text
from sphinx.util import logging

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
RENDER_SCRIPT = HERE / "render_math.js"
MARK = "<!-- fast-pages -->"
FONT_DIR = "_static/mathjax-fonts"
SEARCH_SCRIPTS = ("searchtools.js", "language_data.js", "searchindex.js")

# --- while Sphinx writes a page: drop the client-side maths and the widget state ---------


def _drop_client_scripts(app, pagename, templatename, context, doctree) -> None:
    kept = []
    for asset in context.get("script_files", []):
        filename = str(getattr(asset, "filename", "") or "")
        attributes = getattr(asset, "attributes", {}) or {}
        body = attributes.get("body", "") or ""
        if "mathjax" in filename.lower() or body.startswith("window.MathJax"):
            continue  # typeset at build time
        if attributes.get("type") == "application/vnd.jupyter.widget-state+json":
            continue  # no widget manager on the website
        kept.append(asset)
    context["script_files"] = kept


# --- after the build: maths, icons, scripts, figures -------------------------------------

MATH_ELEMENT = re.compile(
    r'(<(span|div) class="math[^"]*"[^>]*>)(.*?)(</\2>)', re.S)
DELIMITED = re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)


def _node_modules(app) -> Path:
    return Path(os.environ.get("BOOK_NODE_MODULES")
                or Path(app.outdir).parent / "node" / "node_modules")


def _node(app, script: Path, package: str, request: dict) -> dict:
    """Run ``script`` in node with the build's npm packages, ``request`` as JSON on its stdin;
    its JSON answer. ``package`` is the npm package it needs."""
    modules = _node_modules(app)
    if not (modules / package).is_dir():
        raise RuntimeError(f"{modules / package} is missing: `make book` installs it "
                           "(npm ci in _build/node from _ext/node/package-lock.json)")
    done = subprocess.run(["node", str(script)], input=json.dumps(request), capture_output=True,
                          text=True, env={**os.environ, "BOOK_NODE_MODULES": str(modules)},
                          check=False, timeout=600)
    if done.returncode:
        raise RuntimeError(f"node {script.name} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


def _render(app, pages: list[dict]) -> list[dict]:
    """Typeset ``pages`` ([{"fontURL", "math": [[tex, display], ...]}]) with node."""
    tex = dict((app.config.mathjax3_config or {}).get("tex", {}))
    return _node(app, RENDER_SCRIPT, "mathjax-full", {"config": tex, "pages": pages})["pages"]


def _minify_css(css: str) -> str:
    css = re.sub(r"\s*\n\s*", "", css)
    css = re.sub(r"\s*([{};,>])\s*", r"\1", css)
    return css.replace(";}", "}")


def _render_maths(app, docs: list[tuple[Path, str]]) -> dict[Path, str]:
    """The pages of ``docs`` with their maths typeset (pages without maths left out)."""
    jobs = []
    for path, text in docs:
        found = []
        for m in MATH_ELEMENT.finditer(text):
            d = DELIMITED.search(m.group(3))
            if d:
                display = d.group(2) is not None
                found.append((html.unescape(d.group(1) if d.group(1) is not None
                                            else d.group(2)), display))
        if found:
            depth = len(path.relative_to(app.outdir).parts) - 1
            jobs.append((path, text, found, "../" * depth + FONT_DIR))
    if not jobs:
        return {}
    rendered = _render(app, [{"fontURL": f, "math": [list(x) for x in found]}
                             for _, _, found, f in jobs])
    out = {}
    for (path, text, _found, _), result in zip(jobs, rendered, strict=True):
        markup = iter(result["html"])

        def typeset(m: re.Match, markup=markup) -> str:
            inner = m.group(3)
            d = DELIMITED.search(inner)
            if not d:
                return m.group(0)
            return m.group(1) + inner[:d.start()] + next(markup) + inner[d.end():] + m.group(4)

        text = MATH_ELEMENT.sub(typeset, text)
        if "<mjx-merror" in text:
            logger.warning("%s: MathJax reports a TeX error", path.relative_to(app.outdir))
        # The text around a formula is shown at once, its glyphs as soon as MathJax's fonts
        # have arrived (font-display: swap), rather than the whole paragraph held back.
        css = re.sub(r"@font-face\s*(/\*.*?\*/)?\s*\{", "@font-face{font-display:swap;",
                     _minify_css(result["css"]))
        style = f'<style id="MJX-CHTML-styles">{css}</style>'
        out[path] = text.replace("</head>", style + "\n</head>", 1)
    return out


def _copy_fonts(app) -> None:
    source = (_node_modules(app) / "mathjax-full" / "es5" / "output" / "chtml" / "fonts"
              / "woff-v2")
    target = Path(app.outdir) / FONT_DIR
    target.mkdir(parents=True, exist_ok=True)
    for font in source.glob("*.woff"):
        if not (target / font.name).exists():
            shutil.copy2(font, target / font.name)


# Font Awesome's icons and CSS, read from the theme's script.
ICON = re.compile(r'(?:"([\w-]+)"|([A-Za-z_$][\w$]*)|(\d+)):\[(\d+),(\d+),\[[^\]]*\],'
                  r'"[0-9a-f]*","([^"]*)"\]')
PACK_END = re.compile(r'\}\(function\(\)\{[a-zA-Z]\("(fab|far|fas)",')
I_TAG = re.compile(r'<i class="([^"]*\bfa-[^"]*)"([^>]*)>\s*</i>')
STYLE_PREFIX = {"fa-solid": "fas", "fas": "fas", "fa-regular": "far", "far": "far",
                "fa-brands": "fab", "fab": "fab"}
NOT_ICON_NAMES = {"fa-lg", "fa-fw", "fa-xs", "fa-sm", "fa-1x", "fa-2x", "fa-3x", "fa-solid",
                  "fa-regular", "fa-brands"}


def _icon_css(script: str) -> str:
    """The rules of Font Awesome's style sheet (a string in its script) for inline SVGs."""
    i = script.find("svg:not(:host).svg-inline--fa")
    if i < 0:
        return ""
    # The sheet is one string literal that starts with its custom properties.
    begin = script.rfind(":host,:root", 0, i)
    start = max(script.rfind('"', 0, begin), script.rfind("'", 0, begin))
    sheet = script[start + 1:script.find(script[start], i)]
    kept, depth, rule_start = [], 0, 0
    for pos, char in enumerate(sheet):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                rule = sheet[rule_start:pos + 1]
                selector = rule.split("{", 1)[0]
                if rule.count("{") == 1 and re.search(r"svg-inline--fa|\.fa-(lg|fw)\b", selector):
                    kept.append(rule)
                rule_start = pos + 1
    return "".join(kept)


class Icons:
    """Inline SVGs of Font Awesome's icons, as its script would write them."""

    def __init__(self, script: Path) -> None:
        text = script.read_text(encoding="utf-8")
        self.packs: dict[str, dict[str, tuple[int, int, str]]] = {}
        start = 0
        for end in PACK_END.finditer(text):
            # A pack's icons are the object literal just before its registration.
            body = text[start:end.start()]
            body = body[body.rfind("var p={"):] if "var p={" in body else body
            icons = {}
            for m in ICON.finditer(body):
                name = m.group(1) or m.group(2) or m.group(3)
                icons[name] = (int(m.group(4)), int(m.group(5)), m.group(6))
            self.packs.setdefault(end.group(1), icons)
            start = end.end()
        self.css = _icon_css(text)

    def svg(self, m: re.Match) -> str:
        classes = m.group(1).split()
        prefix = next((STYLE_PREFIX[c] for c in classes if c in STYLE_PREFIX), "fas")
        name = next((c[3:] for c in classes if c.startswith("fa-") and c not in NOT_ICON_NAMES
                     and c[3:] in self.packs.get(prefix, {})), None)
        if name is None:
            return m.group(0)
        width, height, path = self.packs[prefix][name]
        kept = [c for c in classes if c not in STYLE_PREFIX]
        return (f'<svg class="svg-inline--fa {" ".join(kept)}"{m.group(2)} aria-hidden="true" '
                f'focusable="false" data-prefix="{prefix}" data-icon="{name}" role="img" '
                f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}">'
                f'<path fill="currentColor" d="{path}"></path></svg>')


# --- stylesheets: one file instead of a dozen, Font Awesome's fonts cut to the icons used --

STYLESHEET = re.compile(r'<link\b(?=[^>]*\brel="stylesheet")[^>]*\bhref="([^"]+)"[^>]*/?>\s*')
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""")
CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*['"]([^'"]+)['"]\s*\)?\s*;""")
DROPPED_CSS = ("sphinx-thebe.css",)  # thebe is not loaded (offline_pages.py)
# Font Awesome's rules that draw an ``<i class="fa-NAME">`` with its font: those icons
# are inline SVGs on these pages, so the rules (about 1,900) only cost parsing time.
FA_ICON_RULES = re.compile(r"(?:\.fa-[\w-]+:{1,2}(?:before|after),?)+\{content:[^{}]*\}")


def _load_css(path: Path, target_dir: Path) -> str:
    """``path``'s CSS with its imports inlined and its URLs relative to ``target_dir``."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"@charset\s+[^;]+;", "", text)
    text = re.sub(r"/\*# sourceMappingURL=[^*]*\*/", "", text)
    imported = []

    def inline(m: re.Match) -> str:
        imported.append(_load_css((path.parent / m.group(1)).resolve(), target_dir))
        return f"/*@import {len(imported) - 1}*/"

    text = CSS_IMPORT.sub(inline, text)

    def rebase(m: re.Match) -> str:
        url = m.group(2)
        if re.match(r"(data:|[a-z]+://|//|#|/)", url):
            return m.group(0)
        plain, rest = re.match(r"([^?#]*)(.*)", url).groups()
        moved = os.path.relpath((path.parent / plain).resolve(), target_dir).replace(os.sep, "/")
        return f'url("{moved}{rest}")'

    text = CSS_URL.sub(rebase, text)
    return re.sub(r"/\*@import (\d+)\*/", lambda m: imported[int(m.group(1))], text)


def _icon_codepoints(css: str) -> set[int]:
    """The private-use characters the style sheets draw with Font Awesome's fonts, apart
    from the ``.fa-NAME:before`` rules of ``<i>`` icons (inline SVGs on these pages)."""
    points = set()
    for selector, body in re.findall(r"([^{}]*)\{([^{}]*)\}", css):
        if re.fullmatch(r"(\s*\.fa[-\w]*:{1,2}(before|after)\s*,?)+", selector.split("}")[-1]):
            continue
        codes = [int(h, 16) for h in re.findall(r"\\([0-9a-fA-F]{4,5})", body)]
        codes += [ord(c) for c in body if 0xE000 <= ord(c) <= 0xF8FF]
        points.update(c for c in codes if 0xE000 <= c <= 0xF8FF)
    return points


def _subset_icon_fonts(css: str, static: Path) -> str:
    """Point Font Awesome's @font-face rules at fonts cut to the characters the CSS uses."""
    from fontTools import subset

    points = _icon_codepoints(css)

    def face(m: re.Match) -> str:
        rule = m.group(0)
        ttf = re.search(r'url\("?([^")]*fa-[\w-]+\.ttf)"?\)', rule)
        if not ttf or not points:
            return rule
        source = (static / ttf.group(1)).resolve()
        digest = hashlib.sha256(repr(sorted(points)).encode()).hexdigest()[:8]
        target = source.with_name(f"{source.stem}.{digest}.woff")
        if not target.exists():
            options = subset.Options()
            options.flavor = "woff"
            options.notdef_outline = True
            font = subset.load_font(str(source), options)
            subsetter = subset.Subsetter(options)
            subsetter.populate(unicodes=sorted(points))
            subsetter.subset(font)
            subset.save_font(font, str(target), options)
        url = os.path.relpath(target, static).replace(os.sep, "/")
        return re.sub(r"src:[^;}]*", f'src:url("{url}") format("woff")', rule)

    return re.sub(r"@font-face\s*\{[^}]*Font Awesome[^}]*\}", face, css)


PURGE_SCRIPT = HERE / "purge_css.js"
# Selectors kept whole: Bootstrap's scripts build these names at run time (a tooltip's
# "bs-tooltip-auto", a dropdown's data-bs-popper), where no page or script spells them out.
KEEP_SELECTORS = ("bs-", "popper", "tooltip", "show", "collaps", "fade", "dropdown", "modal",
                  "cheat-sheet")  # the cheat sheet's print rules (:has, which PurgeCSS drops)


def _purge_css(app, css: str, pages: list[str]) -> str:
    """``css`` without the rules that none of ``pages`` (the pages as they are served), no
    other page on disk and no script of the site can use (_ext/purge_css.js)."""
    outdir = Path(app.outdir).as_posix()
    return _node(app, PURGE_SCRIPT, "purgecss", {
        "css": css, "keep": list(KEEP_SELECTORS), "pages": pages,
        "content": [f"{outdir}/**/*.html", f"{outdir}/_static/**/*.js"]})["css"]


class Stylesheets:
    """One bundle per distinct list of a page's local stylesheets, in their order, without
    the rules that nothing on the site uses.

    The rules a page uses are known only once every page is in its final form (the maths
    typeset, the icons drawn), so a page first links to a placeholder, and :meth:`finish`
    writes each bundle and puts its name into the pages."""

    def __init__(self, app, outdir: Path) -> None:
        self.app = app
        self.outdir = outdir
        self.static = outdir / "_static"
        self.bundles: dict[tuple[str, ...], str] = {}  # files -> placeholder
        self.css: dict[str, str] = {}  # placeholder -> the rules of its files

    def bundle(self, files: tuple[Path, ...]) -> str:
        key = tuple(str(f) for f in files)
        if key not in self.bundles:
            css = "\n".join(_load_css(f, self.static) for f in files)
            css = _subset_icon_fonts(css, self.static)
            css = FA_ICON_RULES.sub("", css)
            placeholder = f"bundle-pending-{len(self.bundles)}.css"
            self.bundles[key] = placeholder
            self.css[placeholder] = css
        return self.bundles[key]

    def finish(self, pages: list[str]) -> list[str]:
        """Write each bundle, purged against ``pages``; ``pages`` with the bundles' names."""
        names = {}
        for placeholder, css in self.css.items():
            try:
                css = _purge_css(self.app, css, pages)
            except (RuntimeError, OSError, ValueError) as err:
                logger.warning("fast_pages: the stylesheet keeps every rule: %s", err)
            name = f"bundle-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
            (self.static / name).write_text(css, encoding="utf-8")
            names[placeholder] = name
        for placeholder, name in names.items():
            pages = [text.replace(f"_static/{placeholder}", f"_static/{name}") for text in pages]
        return pages

    def rewrite(self, text: str, path: Path) -> str:
        head_end = text.find("</head>")
        head = text[:head_end]
        files, links = [], []
        for m in STYLESHEET.finditer(head):
            href = m.group(1)
            if re.match(r"([a-z]+:)?//", href):
                continue
            target = (path.parent / html.unescape(href).split("?")[0]).resolve()
            links.append(m)
            if target.name not in DROPPED_CSS and target.is_file():
                files.append(target)
        if not links:
            return text
        name = self.bundle(tuple(files))
        depth = len(path.relative_to(self.outdir).parts) - 1
        tag = f'<link rel="stylesheet" href="{"../" * depth}_static/{name}" />\n'
        pieces, last = [], 0
        for i, m in enumerate(links):
            pieces.append(head[last:m.start()])
            if i == 0:
                pieces.append(tag)
            last = m.end()
        pieces.append(head[last:])
        return "".join(pieces) + text[head_end:]


def _describe(text: str, written: str) -> str:
    """``text`` with a meta description: the first paragraph of prose of the page as Sphinx
    ``written`` it (its maths as plain text), shortened."""
    if 'name="description"' in text:
        return text
    article = written[written.find("<article"):]
    for m in re.finditer(r"<p>(.*?)</p>", article, flags=re.S):
        if article[:m.start()].rstrip().endswith("<li>"):
            continue
        p = MATH_ELEMENT.sub(lambda e: tex_to_text(html.unescape(re.sub(
            r"^\\[(\[]|\\[)\]]$", "", e.group(3).strip()))), m.group(1))
        words = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", p))).strip()
        if len(words) >= 50:
            if len(words) > 160:
                words = words[:157].rsplit(" ", 1)[0] + "\u2026"
            meta = f'<meta name="description" content="{html.escape(words, quote=True)}" />'
            charset = re.search(r'<meta charset="[^"]*"\s*/?>', text)
            if not charset:
                return text
            return text[:charset.end()] + "\n" + meta + text[charset.end():]
    return text


SCRIPT_SRC = re.compile(r'<script\b([^>]*?\s)src="([^"]+)"([^>]*)></script>')
IMG = re.compile(r"<img\b([^>]*?)\s*/?>")


def _png_size(path: Path) -> tuple[int, int] | None:
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def _fast_head(text: str, path: Path, outdir: Path, icons: Icons | None,
               docs_options: str | None) -> str:
    is_search = path.name == "search.html" and path.parent == outdir

    def script(m: re.Match) -> str:
        before, src, after = m.group(1), m.group(2), m.group(3)
        base = src.split("?")[0].rsplit("/", 1)[-1]
        if "fontawesome" in base and icons is not None:
            return ""
        if base in SEARCH_SCRIPTS and not is_search:
            return ""
        if base == "documentation_options.js" and docs_options is not None:
            return f"<script>{docs_options}</script>"
        if re.search(r"\b(defer|async)\b", before + after) or 'type="module"' in before + after:
            return m.group(0)
        return f"<script defer{before}src=\"{src}\"{after}></script>"

    text = SCRIPT_SRC.sub(script, text)
    if icons is not None:
        text = I_TAG.sub(icons.svg, text)
        if icons.css:
            text = text.replace("</head>", f"<style id=\"fa-svg-styles\">{icons.css}</style>"
                                "\n</head>", 1)
    def image(m: re.Match) -> str:
        attrs = m.group(1)
        src = re.search(r'src="([^"]+)"', attrs)
        if not src or "_images/" not in src.group(1):
            return m.group(0)
        size = _png_size(path.parent / html.unescape(src.group(1)))
        shown = re.search(r"width:\s*(\d+)px", attrs)
        if size and "height=" not in attrs:
            w = int(shown.group(1)) if shown else size[0]
            attrs += f' width="{w}" height="{round(w * size[1] / size[0])}"'
        if "loading=" not in attrs:
            attrs += ' loading="lazy"'
        if "decoding=" not in attrs:
            attrs += ' decoding="async"'
        return f"<img{attrs} />"

    return IMG.sub(image, text)


THEME_SCRIPT = "_static/scripts/pydata-sphinx-theme.js"
# The theme's measurement of every scrollable box (one expression in its minified script).
EAGER_TAB_STOP = re.compile(r"(\w+)\.tabIndex=\1\.scrollWidth>\1\.clientWidth\|\|"
                            r"\1\.scrollHeight>\1\.clientHeight\?0:-1")
LAZY_TAB_STOPS = HERE / "lazy_tab_stops.js"


def _lazy_tab_stops(outdir: Path) -> None:
    """The theme's script measures each box only when it nears the screen (lazy_tab_stops.js).

    Its source map no longer matches, and its reference is dropped."""
    path = outdir / THEME_SCRIPT
    if not path.exists():
        return
    text = path.read_text(encoding="utf-8")
    if "function lcTabStop(" in text:
        return
    text, found = EAGER_TAB_STOP.subn(r"lcTabStop(\1)", text)
    if found != 1:
        logger.warning("fast_pages: %s: the tab-stop measurement found %d times, not once; "
                       "every page lays out all its sections at load", THEME_SCRIPT, found)
        return
    text = re.sub(r"\n?//# sourceMappingURL=\S+\s*$", "\n", text)
    path.write_text(text + LAZY_TAB_STOPS.read_text(encoding="utf-8"), encoding="utf-8")


BLOB = re.compile(r'(<script type="application/octet-stream" class="lc-blob"[^>]*?)>'
                  r'\s*([A-Za-z0-9+/=\s]+?)\s*</script>')


def _move_blobs(text: str, path: Path, outdir: Path) -> str:
    """Each control's base64 data into ``_static/blobs/<hash>.bin``, its address left."""
    import base64

    def move(m: re.Match) -> str:
        data = base64.b64decode("".join(m.group(2).split()))
        target = outdir / "_static" / "blobs" / f"{hashlib.sha256(data).hexdigest()[:16]}.bin"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(data)
        src = Path(os.path.relpath(target, path.parent)).as_posix()
        return f'{m.group(1)} data-src="{html.escape(src)}"></script>'

    return BLOB.sub(move, text)


def rewrite_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    _lazy_tab_stops(outdir)
    docs = []
    for path in sorted(outdir.rglob("*.html")):
        if "_static" in path.relative_to(outdir).parts:
            continue
        text = path.read_text(encoding="utf-8")
        if MARK not in text:
            docs.append((path, text))
    if not docs:
        return
    script = outdir / "_static" / "scripts" / "fontawesome.js"
    icons = Icons(script) if script.exists() else None
    if icons is not None and not icons.packs.get("fas"):
        logger.warning("fast_pages: no icons found in %s; pages keep the script", script)
        icons = None
    options_file = outdir / "_static" / "documentation_options.js"
    docs_options = options_file.read_text(encoding="utf-8") if options_file.exists() else None
    try:
        typeset = _render_maths(app, docs)
    except (RuntimeError, OSError, ValueError) as err:
        logger.warning("fast_pages: maths not rendered: %s", err)
        # Pages with maths stay as Sphinx wrote them, to be rendered by the next build.
        docs = [(p, t) for p, t in docs if not any(
            DELIMITED.search(m.group(3)) for m in MATH_ELEMENT.finditer(t))]
        typeset = {}
    if typeset:
        _copy_fonts(app)
    sheets = Stylesheets(app, outdir)
    texts = []
    for path, written in docs:
        text = typeset.get(path, written)
        text = _move_blobs(text, path, outdir)
        text = _fast_head(text, path, outdir, icons, docs_options)
        text = sheets.rewrite(text, path)
        text = _describe(text, written)
        texts.append(text.replace("</head>", MARK + "\n</head>", 1))
    for (path, _), text in zip(docs, sheets.finish(texts), strict=True):
        path.write_text(text, encoding="utf-8")


def setup(app):
    # After sphinx.ext.mathjax (500) and myst-nb add their scripts, before offline_pages
    # (900) warns about remote ones.
    app.connect("html-page-context", _drop_client_scripts, priority=800)
    # After the other build-finished handlers (the search index, copied assets).
    app.connect("build-finished", rewrite_pages, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
