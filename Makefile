# `make demo` and `make test` are the only set-up a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench clean test-tools

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/batchgate demo $(DEMO_ARGS)

test: $(STAMP) test-tools
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# Debian's tools that tests drive, installed where missing (CI's fresh machine), never downloaded
# by pip: headless Chromium for the dashboard's browser tests, promtool (package prometheus) for
# the monitoring overlay's alert rules.
test-tools:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver -a -x /usr/bin/promtool || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver prometheus; }

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
