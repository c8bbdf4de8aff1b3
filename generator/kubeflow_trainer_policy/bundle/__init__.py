"""OPA bundles of the shipped policies: build (deterministic tar.gz), sign and verify (OPA's format)."""
