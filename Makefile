# flashbook: one entry point. `make help` lists the targets.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
export MPLBACKEND := Agg
export PYTHONHASHSEED := 0

.PHONY: help venv lab book book-strict book-rebuild test check audit lint unit nbval browser browser-book live chromium bench test-cost clean pdf student sheets

# Debian's Chromium drives the browser tests (Playwright launches it by path; it never downloads one): its headless
# shell (package chromium-headless-shell), the same Blink engine without the browser's user interface, which is what
# Playwright runs for headless tests by default; the built-book suite takes 41% less CPU in it than in the full
# browser. The live latency benchmark measures what a reader's browser does: the full Chromium (READER_CHROMIUM).
CHROMIUM        ?= /usr/bin/chromium-headless-shell
READER_CHROMIUM ?= /usr/bin/chromium
export FLASHBOOK_CHROMIUM := $(CHROMIUM)
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

help:  ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/' | expand -t 14

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml jupyter-config/labconfig/default_setting_overrides.json
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	@# JupyterLab's default settings for the book (every cell rendered, so Run All fills every {eval} number);
	@# Binder's postBuild does the same
	mkdir -p $(VENV)/etc/jupyter/labconfig
	cp jupyter-config/labconfig/default_setting_overrides.json $(VENV)/etc/jupyter/labconfig/
	@touch $(STAMP)

venv: $(STAMP)  ## create .venv and install requirements-dev.txt (includes requirements.txt and labcore)

lab: $(STAMP)  ## open the book's notebooks live in JupyterLab (installs jupyterlab + jupyterlab-myst into .venv)
	$(BIN)/jupyter lab book/ $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# The strict build: clean, every notebook re-executed, nitpicky, any warning an error. tools/build_stamp.py
# records what it was built from, so a second strict build of the same source (make test after make book) is
# not run again: any change of a file, package, FLASHBOOK_* variable or byte of _build/html runs it anew.
BUILD_CMD := jupyter-book build . -n -W --keep-going

book: $(STAMP)  ## build the HTML book (strict, as CI builds it; skipped if _build/html is this source's) and print where it is
	@$(MAKE) --no-print-directory book-strict
	@echo "The book is at $(CURDIR)/_build/html/index.html"

book-strict: $(STAMP)  ## the strict build (book-rebuild), unless _build/html already is the strict build of this exact source
	@$(BIN)/python tools/build_stamp.py check "$(BUILD_CMD)" || $(MAKE) --no-print-directory book-rebuild

book-rebuild: $(STAMP)  ## clean build with -n -W --keep-going, always: any warning or execution error fails
	@$(BIN)/python tools/build_stamp.py begin "$(BUILD_CMD)"
	@# everything but _build/.frame-cache: frames an earlier build drew from this same source (flashbook.player)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	$(BIN)/$(BUILD_CMD)
	@! grep -rl 'class="output traceback\|class="output stderr' _build/html --include=*.html \
	  || (echo "error output in the built HTML (files above)" && false)
	@! grep -rlE 'np\.(float|int)[0-9]+\(' _build/html --include=*.html \
	  || (echo "raw numpy scalar reprs (np.float64(...)) in the built HTML (files above): display plain, rounded values" && false)
	@$(BIN)/python tools/build_stamp.py end "$(BUILD_CMD)"

lint: $(STAMP)  ## ruff (pyproject.toml [tool.ruff]): pyflakes, private names, the engine's banned imports
	$(BIN)/ruff check .

# The suite's tiers (pytest markers, pyproject.toml; tests/tiers.py): make check runs the unit tests marked neither
# slow nor audit; make test every test not marked audit (TIER); make audit every test (TIER="audit or not audit").
# A matrix (every explorer setting, every page in both themes at both widths, every notebook live) is checked by
# make test on a representative share; the rest of it is marked audit.
TIER ?= not audit

check: lint  ## the edit loop (under 2 minutes): lint, then the unit tests not marked slow (or audit), on every core
	$(BIN)/python -m pytest -q -n auto tests -m "not browser and not slow and not audit"

# pytest-xdist: one worker per core (PYTEST_XDIST_AUTO_NUM_WORKERS overrides it)
unit: $(STAMP)  ## unit and property tests of labcore and flashbook (not the browser suite), on every core
	$(BIN)/python -m pytest -q -n auto tests -m "not browser and ($(TIER))"

nbval: $(STAMP)  ## execute every notebook under nbval (--nbval-lax: cells that assert must pass)
	FLASHBOOK_PREFETCH=0 $(BIN)/python -m pytest -q --nbval-lax -p no:cacheprovider book/

# Each binary is the Debian package of its name (chromium, chromium-headless-shell)
$(sort $(CHROMIUM) $(READER_CHROMIUM)):
	$(SUDO) apt-get update -q
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $(notdir $@)

chromium: $(CHROMIUM)  ## install Debian's chromium-headless-shell (the browser tests' Chromium) if it is missing (apt-get)

browser: $(STAMP) $(CHROMIUM)  ## both browser suites in one Chromium, with screenshots of every page for a person (artifacts/)
	@test -f _build/html/index.html || (echo "no _build/html: run 'make book' first" && false)
	FLASHBOOK_SCREENSHOTS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -m "browser and ($(TIER))" tests/browser
	@echo "screenshots of every page: $(CURDIR)/artifacts/screenshots/ (players: artifacts/readability/, live: artifacts/live/)"

browser-book: $(STAMP) $(CHROMIUM)  ## the built-book browser suites alone (pages, players, forms; needs _build/html)
	@test -f _build/html/index.html || (echo "no _build/html: run 'make book' first" && false)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "browser and ($(TIER))" tests/browser \
	  --ignore=tests/browser/test_live_notebooks.py

live: $(STAMP) $(CHROMIUM)  ## the live-notebook suite alone: Run All in JupyterLab in headless Chromium (make audit: every notebook)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "$(TIER)" tests/browser/test_live_notebooks.py

# After lint, two stages run at a time, in the order of this list: the strict build (reused when _build/html is
# already this source's: tools/build_stamp.py) and then the built-book browser suites over it (the longest chain,
# started first), beside the live notebooks, then nbval, then the unit tests: last, because their two xdist workers
# keep both cores busy to the end, where a browser stage alone leaves part of one idle. Each stage's output is
# printed whole when it ends; the first failure stops the rest.
test: lint $(CHROMIUM)  ## what CI runs, every test not marked audit: lint; then book-strict + browser-book beside live, nbval and unit (2 at a time)
	@# Chromium first (apt-get, if missing), so the two browser stages never install it at the same time
	$(MAKE) --no-print-directory -j2 --output-sync=target book-and-browser live nbval unit
	@echo "all tests passed"

.PHONY: book-and-browser
book-and-browser:  # (a stage of make test) the strict build, then the browser suites over it
	$(MAKE) --no-print-directory book-strict
	$(MAKE) --no-print-directory browser-book

# Before a release (not part of make test, which CI runs): make test's stages with every test, the full matrices
# included: every page in both themes at both widths, every notebook live, every setting of every explorer.
audit:  ## the full matrices (before a release): make test with every test, the ones marked audit included
	$(MAKE) --no-print-directory test TIER="audit or not audit"

bench: $(STAMP) $(READER_CHROMIUM)  ## performance budget: notebook times, explorer latency, build time, import time, page weight
	$(BIN)/python bench/run.py
	$(BIN)/python bench/labs.py                 # seconds to grade each lab's reference and mistaken kernels (<= 2 s)
	$(BIN)/python bench/cuda_labs.py            # seconds to grade each CUDA lab in the simulator (<= 10 s)
	$(BIN)/python bench/grade_class.py          # flashbook-grade on thirty made-up submissions
	$(BIN)/python bench/megakernel_schedule.py  # the megakernel event loop, cold and cached
	$(BIN)/python bench/prefill_time.py         # one vectorised prefill_time call
	FLASHBOOK_CHROMIUM=$(READER_CHROMIUM) $(BIN)/python -m pytest -q -s -p no:cacheprovider bench/live_latency.py   # browser-side live latency (JupyterLab, the full Chromium)
	$(BIN)/python bench/results.py              # the latest figures into bench/RESULTS.md (the README links it)

test-cost: $(STAMP) $(CHROMIUM)  ## what make test costs: each stage alone, then make test, in wall time and CPU-s (needs make book)
	$(BIN)/python bench/suite_cost.py
	$(BIN)/python bench/results.py

pdf: $(STAMP) $(CHROMIUM)  ## the whole book as one PDF (_build/pdf/flashbook.pdf): Debian's Chromium prints the built HTML
	@test -f _build/html/index.html || (echo "no _build/html: run 'make book' first" && false)
	$(BIN)/python tools/book_pdf.py --check

clean:  ## remove the build output (keeps .venv)
	rm -rf _build artifacts .pytest_cache .hypothesis

# --- editions and exercise sheets (flashbook/exercises/student.py, flashbook/exercises/sheets.py) ---------------
.PHONY: student sheets student-pdf
IDS ?=
SHEETS ?= _build/sheets

student: $(STAMP)  ## build the student edition (no worked solutions, hashed keys, no instructors' page or repository link) into _build/student/html
	PYTHONPATH=$(CURDIR) $(BIN)/python -m flashbook.exercises.student --root . --out _build/student

student-pdf: $(STAMP) $(CHROMIUM)  ## the student edition as one PDF (_build/pdf/flashbook-student.pdf), as make pdf prints the full one
	@test -f _build/student/html/index.html || (echo "no _build/student/html: run 'make student' first" && false)
	$(BIN)/python tools/book_pdf.py --edition student --check

sheets: $(STAMP)  ## one exercise sheet per student and the answer key: make sheets IDS="alice bob carol" [SHEETS=dir]
	@test -n "$(IDS)" || (echo 'give the student ids: make sheets IDS="alice bob carol"' && false)
	PYTHONPATH=$(CURDIR) $(BIN)/python -m flashbook.exercises.sheets --ids $(IDS) --out $(SHEETS)
