# The attention book. Every target creates .venv and installs requirements.txt
# when they are missing or out of date, so on a fresh machine `make book` and
# `make test` are all the set-up there is.

# A supported Python, 3.11 to 3.13: the first of python3.11, python3.12, python3.13 and
# python3 that runs and is one of them (`make PYTHON=/path/to/python3.12 ...` to choose).
SUPPORTED_PYTHON := import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))
ifeq ($(origin PYTHON), undefined)
PYTHON := $(shell for p in python3.11 python3.12 python3.13 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c '$(SUPPORTED_PYTHON)' 2>/dev/null \
	&& { command -v $$p; break; }; done)
endif
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

.PHONY: help book serve test lint unit notebooks executed-tests site-tests lab-tests env-tests reader-env lab bench bench-store bench-site train-model induction-seeds coreference-model sparse-autoencoder tokens-comparison clean distclean

help:
	@echo "make book   build the website (strict) into _build/html"
	@echo "make test   lint, unit + property tests, the strict build (each chapter's run in the"
	@echo "            book's environment, compared with the stored outputs), site, JupyterLab"
	@echo "            and reader-environment tests; prints each stage's time"
	@echo "make serve  serve _build/html on http://127.0.0.1:$(PORT)"
	@echo "make lab    JupyterLab on the chapters (installs only what running them needs)"
	@echo "make bench  run the benchmarks, print their tables (with the CPU) and write _build/bench/"
	@echo "make bench-store  the same, writing the packaged results the chapters read"
	@echo "make train-model  train the book's Shakespeare model and store it in the package"
	@echo "make induction-seeds  train chapter 20's induction model from six seeds, store the table"
	@echo "make coreference-model  train chapter 21's coreference encoder, store it in the package"
	@echo "make sparse-autoencoder  train the sparse autoencoder of the Shakespeare model, store it"
	@echo "make tokens-comparison  train chapter 12's character and BPE models, store what they reach"
	@echo "make bench-site   Lighthouse (mobile) on every page of the built site, served gzip-compressed"
	@echo "make clean  remove the built site and caches (distclean also removes .venv)"

# .venv, made once with the Python found above (or says what to install).
$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "No Python 3.11, 3.12 or 3.13 found. Install one (Debian and"\
	  "Ubuntu: apt-get install python3 python3-venv), or name it: make PYTHON=/path/to/python3.12";\
	  exit 1; }
	@$(PYTHON) -c '$(SUPPORTED_PYTHON)' || { echo "$(PYTHON) is $$($(PYTHON) --version 2>&1);"\
	  "the book needs Python 3.11, 3.12 or 3.13"; exit 1; }
	@echo "Creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version))"
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); echo "$(PYTHON) cannot make a virtual"\
	  "environment. Debian and Ubuntu: apt-get install python3-venv (for python3.11 on"\
	  "Debian 12: python3.11-venv)"; exit 1; }

$(STAMP): requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	touch $(STAMP)

# What reading and running the chapters needs and nothing else (binder/requirements.txt:
# JupyterLab, jupyterlab-myst, the kernel, numpy, matplotlib, ipywidgets, tqdm), with the
# library installed editable; `make book` and `make test` add the build and test tools.
LAB_STAMP := $(VENV)/.lab-installed
$(LAB_STAMP): binder/requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip
	grep -v '^\.$$' binder/requirements.txt > $(VENV)/lab-requirements.txt
	$(BIN)/python -m pip install -r $(VENV)/lab-requirements.txt -e .
	touch $(LAB_STAMP)
	@echo "$(VENV): $$(du -sh $(VENV) | cut -f1), $$($(BIN)/python -m pip list 2>/dev/null | tail -n +3 | wc -l) packages"

# Notebooks execute when Sphinx reads them, and Sphinx re-reads only pages whose
# source changed. The notebooks also depend on attention_lib (its code and the
# data it ships) and on the pinned packages, so when those change every page is re-read
# (--all): the executed notebooks in _build/jupyter_execute are then always today's, and
# `make test` checks them instead of running the chapters again.
INPUTS_HASH = $(shell { find attention_lib -type f -not -path '*/__pycache__/*' | LC_ALL=C sort; echo requirements.txt; } | xargs cat | sha256sum | cut -c1-16)
# Pages read (and so notebooks executed) at once: tools/build_book.py, at most 2 by default.
CPUS := $(shell nproc 2>/dev/null || echo 1)
BOOK_JOBS ?= $(shell [ $(CPUS) -gt 2 ] && echo 2 || echo $(CPUS))
# pytest-xdist workers for the unit tests, the website tests and the reader-environment runs.
TEST_WORKERS ?= $(BOOK_JOBS)
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
	    echo "attention_lib or requirements.txt changed: every page is read and every notebook executed"; \
	    $(BIN)/python tools/build_book.py --jobs $(BOOK_JOBS) . $(BUILD_FLAGS) --all; \
	else \
	    $(BIN)/python tools/build_book.py --jobs $(BOOK_JOBS) . $(BUILD_FLAGS); \
	fi
	@echo "$(INPUTS_HASH)" > $(INPUTS_STAMP)
	@echo "The website is in $(CURDIR)/_build/html/index.html (make serve to browse it)"

# Serves what is built; builds only when there is no site yet (`make book` rebuilds).
serve: $(STAMP)
	@test -f _build/html/index.html || $(MAKE) book
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check .

# With N test processes (or kernels) at once, each one's BLAS gets the CPUs divided by N:
# OpenBLAS's threads wait for work by spinning, and with a thread per CPU in each of two
# processes the book model's two-step replay took 97 s instead of 7.5 s on 2 CPUs.
BLAS_SHARE = $(shell n=$$(( $(CPUS) / $(TEST_WORKERS) )); [ $$n -ge 1 ] && echo $$n || echo 1)
SHARED_BLAS = OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-$(BLAS_SHARE)} \
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-$(BLAS_SHARE)} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-$(BLAS_SHARE)}

unit: $(STAMP) $(NODE_STAMP)
	$(SHARED_BLAS) $(BIN)/python -m pytest -n $(TEST_WORKERS) --durations=5 --timeout=600

# The build's run of each chapter (_build/jupyter_execute) compared with the outputs stored
# in chapters/ under nbval's strict rules, and with the plain copies in colab/ (their
# outputs and the {eval} values in their prose): tests/book, after `make book`.
executed-tests: $(STAMP)
	$(BIN)/python -m pytest tests/book

# Not part of `make test` (the build's run is compared instead): strict nbval over the
# chapters and their plain copies, each notebook executed again, two at a time.
notebooks: $(STAMP)
	$(SHARED_BLAS) $(BIN)/python -m pytest --nbval -p no:cacheprovider -n $(TEST_WORKERS) \
	    --dist loadfile chapters colab --durations=10

# Each page's tests (desktop and phone) stay in one worker (tests/website/conftest.py).
# A page's test takes seconds (the API page's whole-page accessibility check, the longest,
# about a minute on 2 cores): one that takes 15 minutes is stuck, and fails.
site-tests: $(STAMP)
	$(BIN)/python -m pytest tests/website -n $(TEST_WORKERS) --dist loadgroup --timeout=900 \
	    --durations=10

# A fresh environment from binder/requirements.txt (tools/reader_env.py, in
# _build/reader-env; `make test` makes it while the other stages run) runs every chapter
# alone in an empty folder (Colab, and Binder), without the book's build tools; chapter 4
# in that environment's JupyterLab, driven by Chromium (Run All, raw MyST, numbers,
# controls). `make lab-tests` runs only the JupyterLab part.
READER_ENV ?= $(CURDIR)/_build/reader-env
reader-env: $(STAMP)
	$(BIN)/python tools/reader_env.py $(READER_ENV)

env-tests: $(STAMP)
	@test -f $(READER_ENV)/.ready || $(MAKE) --no-print-directory reader-env
	READER_ENV=$(READER_ENV) $(BIN)/python -m pytest tests/environments -n $(TEST_WORKERS) \
	    --dist loadgroup

lab-tests: $(STAMP)
	@test -f $(READER_ENV)/.ready || $(MAKE) --no-print-directory reader-env
	READER_ENV=$(READER_ENV) $(BIN)/python -m pytest tests/environments/test_jupyterlab.py

# Each stage in order (tools/test_stages.py): lint, unit, book, executed-tests, site-tests,
# env-tests, with the reader's environment made beside them; prints each stage's
# time and how often each chapter ran.
test: $(STAMP) $(NODE_STAMP)
	$(BIN)/python tools/test_stages.py

# The reader's set-up (LAB_STAMP) on a fresh clone; the full one where make book or make
# test made it.
lab:
	@if [ -f $(STAMP) ]; then $(MAKE) --no-print-directory $(STAMP); \
	 else $(MAKE) --no-print-directory $(LAB_STAMP); fi
	$(BIN)/jupyter lab chapters

# `make bench` writes its results to _build/bench/ (untracked) and prints where;
# `make bench-store` rewrites the packaged results that the chapters read
# (attention_lib/data/attention_benchmark.json, gpt_benchmark.json and modern_benchmark.json),
# so the next `make book` executes every notebook again; then it runs the script again,
# quickly, and checks that it writes what the stored file holds (pytest --retrain).
bench: $(STAMP)
	@for script in benchmarks/bench_*.py; do \
	    [ -e "$$script" ] || { echo "no benchmarks yet"; break; }; \
	    $(BIN)/python "$$script" || exit 1; \
	done

bench-store: $(STAMP)
	$(BIN)/python benchmarks/bench_attention.py --store
	$(BIN)/python benchmarks/bench_gpt.py --store
	$(BIN)/python benchmarks/bench_modern.py --store
	$(BIN)/python -m pytest tests/test_modern_benchmark.py --retrain

# Trains the book's Shakespeare model (tens of minutes on 2 cores) and writes it into the
# package, attention_lib/data/book_gpt.npz; then trains its first steps again and compares
# them with the stored record (pytest --retrain).
train-model: $(STAMP)
	$(BIN)/python tools/train_book_model.py
	$(BIN)/python -m pytest tests/test_gpt_stored.py --retrain

# Trains chapter 20's induction model from six seeds (about two minutes) and stores what each
# reached, attention_lib/data/induction_seeds.json, and seed 0's weights,
# attention_lib/data/induction_model.npz; then trains seed 1 again and compares it with its
# stored row (pytest --retrain).
induction-seeds: $(STAMP)
	$(BIN)/python tools/induction_seeds.py
	$(BIN)/python -m pytest tests/test_induction_seeds.py --retrain

# Trains chapter 21's coreference encoder (under a minute) and stores it,
# attention_lib/data/coreference_model.npz; then trains it again and compares the weights
# with the file (pytest --retrain).
coreference-model: $(STAMP)
	$(BIN)/python tools/coreference_model.py
	$(BIN)/python -m pytest tests/test_coreference_stored.py --retrain

# Reads the Shakespeare model's residual stream after its second block on 2,048 windows of the
# training text and trains its sparse autoencoder on it (a few minutes), storing it in
# attention_lib/data/sparse_autoencoder.npz; then trains it again and compares the weights
# with the file (pytest --retrain).
sparse-autoencoder: $(STAMP)
	$(BIN)/python tools/sparse_autoencoder.py
	$(BIN)/python -m pytest tests/test_sparse_autoencoder.py --retrain

# Trains chapter 12's character model and BPE model with the same compute (about six minutes)
# and stores what each reached, attention_lib/data/tokens_comparison.json; then trains both
# again and compares them with the file (pytest --retrain).
tokens-comparison: $(STAMP)
	$(BIN)/python tools/tokens_comparison.py
	$(BIN)/python -m pytest tests/test_tokens_comparison.py --retrain

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
