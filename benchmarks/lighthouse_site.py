"""Lighthouse's mobile measurement of every page of the built site.

``make bench-site`` runs this: it serves ``_build/html`` gzip-compressed on
127.0.0.1 (benchmarks/gzip_server.py), runs Lighthouse (npm, installed into
``_build/lighthouse`` from benchmarks/lighthouse/package-lock.json) with the
system Chromium on every page of ``_toc.yml`` with its default mobile preset
(simulated slow 4G, a mid-range phone's CPU), each page ``--runs`` times, and
prints the median of each column with the machine's load. The reports go to
``_build/bench/lighthouse/`` and the table to ``_build/bench/site.json``.

Options: ``--runs N`` (default 2), ``--pages intro notation ...`` (default: all),
``--html DIR`` (default ``_build/html``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gzip_server import serve  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE = ROOT / "_build" / "lighthouse" / "node_modules" / "lighthouse" / "cli" / "index.js"
# The flags the browser tests use (tests/chromium.py), plus headless.
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync"]
CATEGORIES = ("performance", "accessibility", "best-practices", "seo")


def toc_pages() -> list[str]:
    toc = (ROOT / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", toc, flags=re.M).group(1)
    return [root] + re.findall(r"^\s*-?\s*file:\s*(\S+)\s*$", toc, flags=re.M)


def chromium() -> str:
    path = os.environ.get("CHROME_PATH") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if not path:
        sys.exit("no Chromium found: apt-get install -y chromium (or set CHROME_PATH)")
    return path


def run_lighthouse(url: str, out: Path) -> dict:
    """One Lighthouse run of ``url``; returns the numbers of the table."""
    cmd = ["node", str(LIGHTHOUSE), url, "--quiet", "--output=json", f"--output-path={out}",
           f"--only-categories={','.join(CATEGORIES)}",
           f"--chrome-flags={' '.join(CHROME_FLAGS)}"]
    env = {**os.environ, "CHROME_PATH": chromium()}
    subprocess.run(cmd, check=True, env=env, timeout=600, stdout=subprocess.DEVNULL)
    report = json.loads(out.read_text())
    if report.get("runtimeError"):
        raise RuntimeError(f"{url}: {report['runtimeError']}")
    audits = report["audits"]
    row = {c: round(100 * (report["categories"][c]["score"] or 0)) for c in CATEGORIES}
    row["lcp_s"] = audits["largest-contentful-paint"]["numericValue"] / 1000
    row["tbt_ms"] = audits["total-blocking-time"]["numericValue"]
    row["bytes"] = audits["total-byte-weight"]["numericValue"]
    return row


def median_row(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--pages", nargs="*", default=None)
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--out", default=str(ROOT / "_build" / "bench"))
    args = parser.parse_args()
    if not LIGHTHOUSE.exists():
        sys.exit(f"{LIGHTHOUSE} is missing: run `make bench-site` (it installs Lighthouse)")
    html = Path(args.html)
    if not (html / "index.html").exists():
        sys.exit(f"{html} has no built site: run `make book` first")
    pages = args.pages or toc_pages()
    reports = Path(args.out) / "lighthouse"
    reports.mkdir(parents=True, exist_ok=True)
    server = serve(html)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    load_before = os.getloadavg()
    results = {}
    version = json.loads((LIGHTHOUSE.parents[1] / "package.json").read_text())["version"]
    print(f"Lighthouse {version} mobile preset, {args.runs} runs per page (median), "
          "served gzip-compressed")
    header = (f"{'page':<44} {'perf':>4} {'LCP s':>6} {'TBT ms':>7} {'a11y':>4} {'b.p.':>4} "
              f"{'SEO':>4} {'KiB':>6}")
    print(header)
    print("-" * len(header))
    started = time.time()
    try:
        for name in pages:
            rows = [run_lighthouse(f"{base}/{name}.html",
                                   reports / f"{name.replace('/', '_')}.{i}.json")
                    for i in range(args.runs)]
            m = results[name] = median_row(rows)
            m["runs"] = rows
            print(f"{name:<44} {m['performance']:>4.0f} {m['lcp_s']:>6.1f} {m['tbt_ms']:>7.0f} "
                  f"{m['accessibility']:>4.0f} {m['best-practices']:>4.0f} {m['seo']:>4.0f} "
                  f"{m['bytes'] / 1024:>6.0f}", flush=True)
    finally:
        server.shutdown()
    load_after = os.getloadavg()
    load = ", ".join(f"{a:.2f}" for a in load_before) + " before; " + ", ".join(
        f"{a:.2f}" for a in load_after) + " after"
    print(f"load average (1, 5, 15 min): {load}; {os.cpu_count()} CPUs; "
          f"{time.time() - started:.0f} s")
    (Path(args.out) / "site.json").write_text(json.dumps(
        {"pages": results, "load_average": load, "runs": args.runs}, indent=1))
    print(f"reports: {reports}/, table: {Path(args.out) / 'site.json'}")


if __name__ == "__main__":
    main()
