"""The real OPA in the loop: tools/opa built from OPA's own Go packages (Debian), or a user's `opa`."""
