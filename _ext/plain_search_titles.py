"""Search results show plain text for titles with maths.

Sphinx stores a section title's maths in the search index as TeX (``\\(n\\)``),
and the search page prints it as it is: "Memory: measured as \\(n\\) grows".
After the build this rewrites the titles in ``searchindex.js`` as plain text
("Memory: measured as n grows"); the pages themselves are unchanged.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.application import Sphinx

SYMBOLS = {
    r"\times": "×", r"\cdot": "·", r"\sqrt": "√", r"\infty": "∞", r"\le": "≤", r"\ge": "≥",
    r"\approx": "≈", r"\to": "→", r"\ell": "ℓ", r"\alpha": "α", r"\beta": "β",
    r"\gamma": "γ", r"\rho": "ρ", r"\sigma": "σ", r"\omega": "ω", r"\partial": "∂",
    r"\mathsf": "", r"\mathbf": "", r"\text": "", r"\operatorname": "", r"\mathrm": "",
    r"\left": "", r"\right": "", r"\,": " ", r"\;": " ", r"\!": "",
}


def tex_to_text(tex: str) -> str:
    """A readable plain-text version of a short TeX formula."""
    out = tex
    for command in sorted(SYMBOLS, key=len, reverse=True):
        # A font command (replaced by nothing) takes the space after it along.
        space = r"\s*" if SYMBOLS[command] == "" else ""
        out = re.sub(re.escape(command) + r"(?![A-Za-z])" + space, SYMBOLS[command], out)
    out = re.sub(r"\\([A-Za-z]+)", r"\1", out)  # any other command: its name
    out = re.sub(r"\^\{([^{}]*)\}", r"^\1", out)
    out = re.sub(r"_\{([^{}]*)\}", r"_\1", out)
    out = out.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", out).strip()


def plain_title(title: str) -> str:
    return re.sub(r"\\\((.*?)\\\)|\$(.*?)\$",
                  lambda m: tex_to_text(m.group(1) or m.group(2) or ""), title)


def _rewrite(value):
    if isinstance(value, str):
        return plain_title(value)
    if isinstance(value, list):
        return [_rewrite(v) for v in value]
    if isinstance(value, dict):
        return {plain_title(k): v for k, v in value.items()}
    return value


def rewrite_search_index(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = Path(app.outdir) / "searchindex.js"
    if not path.exists():
        return
    text = path.read_text(encoding="utf-8")
    prefix, _, rest = text.partition("(")
    payload = json.loads(rest[: rest.rindex(")")])
    for key in ("titles", "alltitles"):
        if key in payload:
            payload[key] = _rewrite(payload[key])
    path.write_text(f"{prefix}({json.dumps(payload, ensure_ascii=False, separators=(',', ':'))})",
                    encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", rewrite_search_index)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
