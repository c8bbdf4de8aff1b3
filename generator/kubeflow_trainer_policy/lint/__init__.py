"""The checks on the emitted Rego that no OPA tool has a rule for, in Regal's style: one rule per file under
lint/rules/, each with a documented id `<category>/<name>` (docs/lint.md). What OPA does itself, the layout
(`opa fmt`), strict mode and METADATA parsing (`opa check --strict`), unit tests (`opa test`) and bundle
activation, runs through the real OPA in `python -m kubeflow_trainer_policy.opa.checks`.
`python -m kubeflow_trainer_policy.lint [ROOT]` runs the rules (make build does)."""
