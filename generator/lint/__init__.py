"""Checks on the emitted Rego that need neither `opa` nor Regal: `python -m generator.lint` (run by `make build`)."""
