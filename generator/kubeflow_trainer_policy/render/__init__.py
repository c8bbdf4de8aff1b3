"""Renderers: everything under policies/, bundles/gatekeeper/ and docs/policies/ is derived from the catalog."""
