# dqkit: two set-up commands, `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-perf venv check-java bench bench-scale clean ui-deps ui-check screenshots faults

check-java:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || \
	  { echo "dqkit needs Python 3.10 or newer (found: $$($(PYTHON) --version 2>&1))."; exit 2; }
	@v=$$(java -version 2>&1 | awk -F'"' '/version/ {print $$2}' | cut -d. -f1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ] 2>/dev/null; then \
	  echo "dqkit needs Java 17 or newer for Spark (found: $${v:-none})."; \
	  echo "Install it, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu)"; \
	  echo "or 'brew install openjdk@17' (macOS), and make sure 'java' is on PATH or JAVA_HOME is set."; \
	  exit 2; \
	fi

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

venv: check-java $(STAMP)

demo: venv
	$(PY) -m dqkit.cli.demo

# The test JVMs live minutes on tiny data: C1-only JIT and the serial GC halve their CPU (measured on a
# 6-row repair: 19.0 s -> 9.3 s of JVM CPU), where C2 compiling Spark's hot paths never pays back.
# (Measured again on the two long-lived test workers: full tiering used 13 % more CPU for the same wall time.)
# The tutorials' kernels and the CLI subprocesses run on a few rows too: DQKIT_SMALL_INPUT_JVM=always gives
# their sessions dqkit's tiny-input settings although they start before their inputs are known.
TEST_JVM := -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
# Spark's classes mapped from one class-data-sharing archive instead of loaded from its jars by every JVM
# the suite starts: a local session starts in about half the CPU (tests/support/jvm_archive.py builds it once per
# virtualenv; JVMs it does not fit, and a run without it, just load the jars).
CDS := $(VENV)/test-classes.jsa
TEST_CDS = $$(test -f $(CURDIR)/$(CDS) && echo -XX:SharedArchiveFile=$(CURDIR)/$(CDS) -Xlog:cds*=off)

$(CDS): $(STAMP) tests/support/jvm_archive.py tests/support/session_config.py
	DQKIT_SMALL_INPUT_JVM=always JDK_JAVA_OPTIONS="$(TEST_JVM)" $(PY) tests/support/jvm_archive.py $@

# Wall-clock bounds (tests marked perf: a budget or a cancel within its seconds) are left out: a loaded
# machine would fail them; each such test's behaviour variant still runs. `make test-perf` runs them alone.
test: venv $(CDS)
	DQKIT_SMALL_INPUT_JVM=always JDK_JAVA_OPTIONS="$(TEST_JVM) $(TEST_CDS)" $(PY) -m pytest -q tests notebooks --nbval-lax -p no:cacheprovider --durations=15 -n 2 --dist loadfile --no-loadscope-reorder -m "not perf"

test-perf: venv $(CDS)
	DQKIT_SMALL_INPUT_JVM=always JDK_JAVA_OPTIONS="$(TEST_JVM) $(TEST_CDS)" $(PY) -m pytest -q tests -p no:cacheprovider -m perf

# Faults survived, the long way (not part of `make test`, which kills each writing command at a few fixed
# points of its timeline): every writing command SIGKILLed at >= 20 random moments (the seed printed;
# KILLS=, SEED=, BACKEND=local|connect to change), each output checked as it was or complete, inputs
# unchanged, the next run clean (tests/support/faults_random.py).
KILLS ?= 20
faults: venv $(CDS)
	DQKIT_SMALL_INPUT_JVM=always JDK_JAVA_OPTIONS="$(TEST_JVM) $(TEST_CDS)" $(PY) tests/support/faults_random.py --kills $(KILLS) $(if $(SEED),--seed $(SEED)) $(if $(BACKEND),--backend $(BACKEND))

# What a new user sees, in a browser. Browsers cannot be downloaded here (`playwright install` fails), so
# Playwright drives the system's Chromium (Debian's `chromium`); ui-deps installs what is missing, or names it.
ui-deps: venv
	@$(PY) -c 'import playwright' 2>/dev/null || $(PY) -m pip install -q -e '.[ui]'
	@$(PY) -c 'import sys; sys.path.insert(0, "tests"); from support import ui_browser; sys.exit(0 if ui_browser.chromium() else 1)' || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt-get install -y -q chromium; \
	    else echo "no Chromium: install it with 'sudo apt-get install -y chromium' (the browser checks are skipped)"; fi; }

# Each tutorial executed with its widget state saved, exported to HTML and inspected in headless Chromium:
# tab titles present, no empty tab, no error output (tests/test_ui_check.py; skipped, with the reason, without a browser).
ui-check: ui-deps
	DQKIT_UI_CHECK=1 JDK_JAVA_OPTIONS="$(TEST_JVM)" $(PY) -m pytest -q -rs -s -p no:cacheprovider tests/test_ui_check.py tests/test_report_structure.py

# One PNG per report (each system's report on its bundled example) into docs/img/.
screenshots: ui-deps
	JDK_JAVA_OPTIONS="$(TEST_JVM)" $(PY) tests/support/ui_browser.py screenshots

bench: venv
	$(PY) -m pip install -q -e '.[test,bench]'
	$(PY) benchmarks/delta.py

# every command at 1M, 3M and 10M rows on the defaults: time, peak memory, growth (never part of make test)
bench-scale: venv
	PYTHONPATH=. $(PY) benchmarks/scale.py --rows 1000000,3000000,10000000

clean:
	rm -rf reports .pytest_cache spark-warehouse metastore_db
