# The attention book. Every target creates .venv and installs requirements.txt
# when they are missing or out of date, so on a fresh machine `make book` and
# `make test` are all the set-up there is.

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
# Strict: a warning (a failing notebook, a broken reference) fails the build.
BUILD_FLAGS := -W -n --keep-going

export PYDEVD_DISABLE_FILE_VALIDATION := 1
# matplotlib's font cache lives with the environment it describes: a cache shared through
# ~/.cache that names the fonts of a removed environment makes matplotlib warn on stderr,
# and every notebook that draws text fails under nbval.
export MPLCONFIGDIR := $(CURDIR)/$(VENV)/matplotlib

.PHONY: help book serve test lint unit notebooks site-tests lab-tests env-tests lab bench bench-store bench-site train-model induction-seeds clean distclean

help:
	@echo "make book   build the website (strict) into _build/html"
	@echo "make test   lint, unit + property tests, nbval over every chapter, strict build, site,"
	@echo "            JupyterLab and Binder-environment tests"
	@echo "make serve  serve _build/html on http://127.0.0.1:$(PORT)"
	@echo "make lab    JupyterLab on the chapters"
	@echo "make bench  run the benchmarks, print their tables (with the CPU) and write _build/bench/"
	@echo "make bench-store  the same, writing the packaged results the chapters read"
	@echo "make train-model  train the book's Shakespeare model and store it in the package"
	@echo "make induction-seeds  train chapter 19's induction model from six seeds, store the table"
	@echo "make bench-site   Lighthouse (mobile) on every page of the built site, served gzip-compressed"
	@echo "make clean  remove the built site and caches (distclean also removes .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	touch $(STAMP)

# Notebooks execute when Sphinx reads them, and Sphinx re-reads only pages whose
# source changed. The notebooks also depend on attention_lib (its code and the
# data it ships), so when that changes every page is re-read (--all).
INPUTS_HASH = $(shell find attention_lib -type f -not -path '*/__pycache__/*' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
INPUTS_STAMP := _build/.inputs-hash

# The build typesets the maths with MathJax in node (_ext/fast_pages.py); its npm
# packages, pinned in _ext/node/package-lock.json, are installed into _build/node.
NODE_DIR   := _build/node
NODE_STAMP := $(NODE_DIR)/.installed

$(NODE_STAMP): _ext/node/package.json _ext/node/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: apt-get install -y nodejs npm"; exit 1; }
	@mkdir -p $(NODE_DIR)
	cp _ext/node/package.json _ext/node/package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

book: $(STAMP) $(NODE_STAMP)
	@mkdir -p _build
	@if [ "$$(cat $(INPUTS_STAMP) 2>/dev/null)" != "$(INPUTS_HASH)" ]; then \
	    echo "attention_lib changed: every page is read and every notebook executed"; \
	    $(BIN)/jupyter-book build . $(BUILD_FLAGS) --all; \
	else \
	    $(BIN)/jupyter-book build . $(BUILD_FLAGS); \
	fi
	@echo "$(INPUTS_HASH)" > $(INPUTS_STAMP)
	@echo "The website is in $(CURDIR)/_build/html/index.html (make serve to browse it)"

# Serves what is built; builds only when there is no site yet (`make book` rebuilds).
serve: $(STAMP)
	@test -f _build/html/index.html || $(MAKE) book
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .

unit: $(STAMP)
	$(BIN)/python -m pytest --durations=5

# Strict nbval: every stored text output must come back identical. The set of
# notebooks in chapters/ equals the set in _toc.yml (tests/test_book_layout.py);
# colab/ holds their plain-Markdown copies (tools/plain_notebooks.py), run the same way.
notebooks: $(STAMP)
	$(BIN)/python -m pytest --nbval -p no:cacheprovider chapters colab --durations=10

site-tests: $(STAMP)
	$(BIN)/python -m pytest tests/website

# The book as run: chapter 4 in a real JupyterLab (Run All, raw MyST, numbers, controls).
lab-tests: $(STAMP)
	$(BIN)/python -m pytest tests/lab

# A fresh environment from binder/requirements.txt runs every chapter, in chapters/
# and alone in an empty folder (Binder and Colab), without the book's build tools.
env-tests: $(STAMP)
	$(BIN)/python -m pytest tests/environments

test: lint unit notebooks book site-tests lab-tests env-tests

lab: $(STAMP)
	$(BIN)/jupyter lab chapters

# `make bench` writes its results to _build/bench/ (untracked) and prints where;
# `make bench-store` rewrites the packaged results that the chapters read
# (attention_lib/data/attention_benchmark.json, gpt_benchmark.json and modern_benchmark.json),
# so the next `make book` executes every notebook again.
bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do \
	    [ -e "$$script" ] || { echo "no benchmarks yet"; break; }; \
	    $(BIN)/python "$$script" || exit 1; \
	done

bench-store: $(STAMP)
	$(BIN)/python benchmarks/bench_attention.py --store
	$(BIN)/python benchmarks/bench_gpt.py --store
	$(BIN)/python benchmarks/bench_modern.py --store

# Trains the book's Shakespeare model (tens of minutes on 2 cores) and writes it into the
# package, attention_lib/data/book_gpt.npz.
train-model: $(STAMP)
	$(BIN)/python tools/train_book_model.py

# Trains chapter 19's induction model from six seeds (about two minutes) and stores what each
# reached, attention_lib/data/induction_seeds.json.
induction-seeds: $(STAMP)
	$(BIN)/python tools/induction_seeds.py

# Lighthouse (npm, pinned in benchmarks/lighthouse/package-lock.json, installed into
# _build/lighthouse) with the system Chromium, on the built site served gzip-compressed
# on 127.0.0.1: a table per page (performance, LCP, TBT, accessibility, best practices,
# SEO, bytes), the median of two runs, with the machine's load.
LIGHTHOUSE_DIR   := _build/lighthouse
LIGHTHOUSE_STAMP := $(LIGHTHOUSE_DIR)/.installed

$(LIGHTHOUSE_STAMP): benchmarks/lighthouse/package.json benchmarks/lighthouse/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: apt-get install -y nodejs npm"; exit 1; }
	@mkdir -p $(LIGHTHOUSE_DIR)
	cp benchmarks/lighthouse/package.json benchmarks/lighthouse/package-lock.json $(LIGHTHOUSE_DIR)/
	cd $(LIGHTHOUSE_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $(LIGHTHOUSE_STAMP)

bench-site: $(STAMP) $(LIGHTHOUSE_STAMP)
	@test -f _build/html/index.html || $(MAKE) book
	CHROME_PATH=$${CHROME_PATH:-$$(command -v chromium || command -v chromium-browser)} \
	    $(BIN)/python benchmarks/lighthouse_site.py

clean:
	rm -rf _build .pytest_cache .hypothesis .ruff_cache
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info
