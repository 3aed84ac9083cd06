# `make test` and `make demo` work on a fresh clone: each creates .venv with
# Python 3.11 and installs the pinned requirements when they are missing or
# have changed since the last install.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed
PYTEST_ARGS ?=

.PHONY: test test-fast demo install install-dev lock clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): requirements.txt constraints.txt pyproject.toml | $(PY)
	$(PIP) install -r requirements.txt -c constraints.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	touch $@

$(DEV_STAMP): $(RUNTIME_STAMP) requirements-dev.txt
	$(PIP) install -r requirements-dev.txt -c constraints.txt
	touch $@

install: $(RUNTIME_STAMP)
install-dev: $(DEV_STAMP)

# Three pytest workers, a test file each (--dist loadfile keeps a file's module fixtures in one process): much of
# the suite waits on single-threaded work (starting TensorFlow in a tool's process, Python-side data code), which
# the other core does meanwhile; and what TensorFlow keeps of a file's SavedModels and functions for a worker's
# life spreads over three processes, each under 4 GB (BUILD.md, Environment notes), at 7% more time than two.
TEST_WORKERS ?= 3

test: $(DEV_STAMP)
	$(PY) -m pytest -q --durations=15 -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The edit-test loop: everything but the end-to-end checks marked slow (tens of seconds each: installed wheels,
# the demo, budgets, distributed runs); `make test` runs them all, as CI does.
test-fast: $(DEV_STAMP)
	$(PY) -m pytest -q --durations=10 -n $(TEST_WORKERS) --dist loadfile -m "not slow" $(PYTEST_ARGS)

demo: $(RUNTIME_STAMP)
	$(PY) -m albert_tf.demo $(DEMO_ARGS)

# Re-resolve the transitive pins (run after changing requirements*.txt).
lock: $(DEV_STAMP)
	{ printf '# Transitive pins: `pip freeze` of the venv that requirements-dev.txt resolved to\n# on Python 3.11 (regenerate with `make lock`).\n'; \
	  $(PIP) freeze --exclude-editable | sed 's/+cpu$$//'; } > constraints.txt

clean-venv:
	rm -rf $(VENV)
