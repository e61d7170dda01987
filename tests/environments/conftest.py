"""The reader's environment both test modules run in (``tools/reader_env.py``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _reader_env_tool():
    spec = importlib.util.spec_from_file_location("reader_env", ROOT / "tools" / "reader_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reader_env = _reader_env_tool()


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory) -> tuple[Path, Path]:
    """(python of the new environment, copy of the repository)."""
    prepared = os.environ.get("READER_ENV")
    if prepared:
        made = reader_env.ready(Path(prepared))
        if made is None:
            pytest.fail(f"READER_ENV={prepared} is not a finished reader environment "
                        "(python tools/reader_env.py DIR makes one)")
        return made
    return reader_env.make(tmp_path_factory.mktemp("binder") / "env")
