# `make demo` and `make test` are the only set-up a fresh machine needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Go's usual home, for shells that did not put it on the PATH
export PATH := $(if $(wildcard /usr/local/go/bin/go),/usr/local/go/bin:,)$(PATH)

.PHONY: demo test bench clean test-tools kube peers conformance operators chart

# The editable install maps the product's packages (pyproject's include, what the wheel ships);
# batchgate-checkout.pth puts the checkout itself on the path for the rest: the local cluster, the
# real control plane's test bed and the demo, which `batchgate cluster` and `batchgate demo` import.
$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	$(BIN)/python -c 'import pathlib, sysconfig; pathlib.Path(sysconfig.get_path("purelib"), "batchgate-checkout.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	touch $(STAMP)

demo: $(STAMP) kube
	$(BIN)/batchgate demo $(DEMO_ARGS)

test: $(STAMP) test-tools kube
	$(BIN)/python -m mypy
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# Debian's tools that tests drive, installed where missing (CI's fresh machine), never downloaded
# by pip: headless Chromium for the dashboard's browser tests, promtool (package prometheus) for
# the monitoring overlay's alert rules, zsh for the plugin's zsh completion.
test-tools:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver -a -x /usr/bin/promtool -a -x /usr/bin/zsh || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver prometheus zsh; }

# The real control plane (realcluster/, docs/realcluster.md): Kubernetes' kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl and etcd, and helm for the chart's tests, built
# from their Go modules at the versions in realcluster/versions.env, once, into ~/.cache/batchgate
# (a progress line each).
# Without Go the tests that need it are skipped (one line says so) and the demo runs on the stand-in.
kube: $(STAMP)
	@if command -v go >/dev/null 2>&1; then $(BIN)/python -m realcluster.toolchain; \
	else echo "realcluster: Go is not installed, so the real control plane is not built: its tests are skipped and the demo runs on the stand-in (install Go 1.25+)"; fi

# The peers that the benchmarks and differential tests run beside batchgate (docs/realcluster.md,
# "Peers"): Kueue's manager and the AppWrapper controller from their Go modules at the versions in
# realcluster/versions.env, into the same cache. Test tools only: not in the image, and not a
# prerequisite of `make test` (a cold build takes minutes); their tests are skipped until built.
peers: $(STAMP)
	@command -v go >/dev/null 2>&1 || { echo "peers: Go is not installed, so Kueue and the AppWrapper controller cannot be built (install Go 1.26+)"; exit 2; }
	$(BIN)/python -m realcluster.toolchain --peers

# The stand-in's kubectl and client tests against Kubernetes' own API server (about 2.5 minutes on
# 2 cores; docs/localcluster-wire.md, "Measured against Kubernetes' own API server", has the figures).
CONFORMANCE_TESTS := $(addprefix tests/localcluster/,test_kubectl.py test_client_api.py test_wire_with_kubectl.py \
	test_server_side_apply.py test_strategic_merge.py test_discovery.py test_bad_input.py test_owner_references.py \
	test_cel.py test_crd_rules.py test_rbac_cluster.py test_protobuf.py test_admission_wiring.py test_wire_with_gateway.py)
conformance: $(STAMP) kube
	BATCHGATE_STANDIN_TESTS_ON=real $(BIN)/python -m pytest -q -p no:randomly -rs $(PYTEST_ARGS) $(CONFORMANCE_TESTS)

# The upstream operators that `RealCluster(operators="upstream")` runs in place of the stand-ins
# (docs/realcluster.md, "Operators"): KubeRay's operator and the training operator, built like the peers.
operators: $(STAMP)
	@command -v go >/dev/null 2>&1 || { echo "operators: Go is not installed, so KubeRay's and the training operator cannot be built (install Go 1.26+)"; exit 2; }
	$(BIN)/python -m realcluster.toolchain --operators

# charts/batchgate, generated from manifests/ (docs/install.md, "Helm"): run after editing them.
chart: $(STAMP)
	$(BIN)/python -m charts.generate

bench: $(STAMP)
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
