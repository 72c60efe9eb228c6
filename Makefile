# `make demo` and `make test` are the only set-up a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean browser

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/batchgate demo $(DEMO_ARGS)

test: $(STAMP) browser
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The dashboard's browser tests drive Debian's headless Chromium; install it where it is missing
# (CI's fresh machine), never a browser download from pip.
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
