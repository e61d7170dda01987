# The attention book. Every target creates .venv and installs requirements.txt
# when they are missing or out of date, so on a fresh machine `make book` and
# `make test` are all the set-up there is.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
# --all: Sphinx re-reads every page (a few seconds; executed outputs still come
# from the cache), so titles and navigation are never stale on unchanged pages.
BUILD_FLAGS := -W -n --keep-going --all

export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: help book serve test lint unit notebooks site-tests lab bench bench-store clean distclean

help:
	@echo "make book   build the website (strict) into _build/html"
	@echo "make test   lint, unit + property tests, nbval over every chapter, strict build, site tests"
	@echo "make serve  serve _build/html on http://127.0.0.1:$(PORT)"
	@echo "make lab    JupyterLab on the chapters"
	@echo "make bench  run the benchmarks, print their tables (with the CPU) and write _build/bench/"
	@echo "make bench-store  the same, writing the packaged results the chapters read"
	@echo "make clean  remove the built site and caches (distclean also removes .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	touch $(STAMP)

# The execution cache (_build/.jupyter_cache) is keyed on each notebook's code
# only. The notebooks also depend on attention_lib and on the benchmark results
# they load, so when those change the cache is dropped and every notebook runs.
INPUTS_HASH = $(shell cat attention_lib/*.py attention_lib/data/*.json | sha256sum | cut -c1-16)
INPUTS_STAMP := _build/.inputs-hash

book: $(STAMP)
	@mkdir -p _build
	@if [ "$$(cat $(INPUTS_STAMP) 2>/dev/null)" != "$(INPUTS_HASH)" ]; then \
	    echo "attention_lib or benchmark results changed: every notebook will be executed"; \
	    rm -rf _build/.jupyter_cache; \
	fi
	$(BIN)/jupyter-book build . $(BUILD_FLAGS)
	@echo "$(INPUTS_HASH)" > $(INPUTS_STAMP)
	@echo "The website is in $(CURDIR)/_build/html/index.html (make serve to browse it)"

serve: book
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .

unit: $(STAMP)
	$(BIN)/python -m pytest --durations=5

# Strict nbval: every stored text output must come back identical. The set of
# notebooks in chapters/ equals the set in _toc.yml (tests/test_book_layout.py).
notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval -p no:cacheprovider chapters --durations=10

site-tests: $(STAMP)
	$(BIN)/python -m pytest tests/website

test: lint unit notebooks book site-tests

lab: $(STAMP)
	$(BIN)/jupyter lab chapters

# `make bench` writes its results to _build/bench/ (untracked) and prints where;
# `make bench-store` rewrites the packaged results that the chapters read
# (attention_lib/data/attention_benchmark.json), so the next `make book`
# executes every notebook again.
bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do \
	    [ -e "$$script" ] || { echo "no benchmarks yet"; break; }; \
	    $(BIN)/python "$$script" || exit 1; \
	done

bench-store: $(STAMP)
	$(BIN)/python benchmarks/bench_attention.py --store

clean:
	rm -rf _build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
