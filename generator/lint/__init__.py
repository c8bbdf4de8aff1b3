"""Checks on the emitted Rego that need neither `opa` nor Regal: `python -m kubeflow_trainer_policy.lint`
(run by `make build`)."""
