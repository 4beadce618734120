# The two set-up commands of the README: `make demo` and `make test`.
# Both create (or reuse) a local virtual environment in .venv.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,plot,engine]'
# byte-compile the sources as a wheel install would (an editable install leaves that to the
# first import, which never writes them under PYTHONDONTWRITEBYTECODE)
	$(PY) -m compileall -q src
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hpn demo

test: $(STAMP)
	$(PY) -m ruff check src tests bench
	$(PY) -m mypy
	$(PY) -m pytest -n 2

lint: $(STAMP)
	$(PY) -m ruff check src tests bench
	$(PY) -m ruff format --check src tests bench

docs: $(STAMP)
	$(PY) -m hpn.reference docs/reference

bench: $(STAMP)
	for f in bench/bench_*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
