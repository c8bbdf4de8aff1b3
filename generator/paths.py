"""Where the committed, generated artifacts live (a source checkout or an editable install)."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
POLICIES_DIR = PROJECT_ROOT / "policies"
BUNDLES_DIR = PROJECT_ROOT / "bundles"
DEFAULT_PROFILE = "v2.0"


def gatekeeper_bundle_dir(profile: str) -> Path:
    return BUNDLES_DIR / "gatekeeper" / profile


EXTERNAL_DATA_VARIANT = "external-data"
"""bundles/gatekeeper/<profile>/external-data/: the install whose override mutability asks the provider."""
