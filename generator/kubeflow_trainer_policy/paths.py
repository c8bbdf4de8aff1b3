"""Where the policies (policies/, profiles/), the bundles and the engine's pinned requirements are read from.

A wheel ships them inside the package (`kubeflow_trainer_policy/{bundles,policies,profiles,requirements}`, copied from
the checkout's top-level folders by pyproject.toml); a source checkout or an editable install reads the
checkout's own folders (the package is generator/kubeflow_trainer_policy/). Only `generate` writes, and only
into a checkout.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent.parent
"""The checkout (source or editable install); in a wheel install, the folder above site-packages, which nothing
writes to."""


def _shipped(name: str) -> Path:
    installed = PACKAGE_DIR / name
    return installed if installed.is_dir() else PROJECT_ROOT / name


POLICIES_DIR = _shipped("policies")
"""The one Rego source tree: a folder per rule and the libs (lib/trainer/)."""
PROFILES_DIR = _shipped("profiles")
"""profiles/<profile>/profile.rego (each profile's lib) and capabilities.json."""
BUNDLES_DIR = _shipped("bundles")
ENGINE_REQUIREMENTS = _shipped("requirements") / "opa-engine.txt"
"""Hash-pinned opa-golib-python-bindings: `trainer-policy install-engine` installs from it."""
DEFAULT_PROFILE = "v2.0"


def is_checkout() -> bool:
    """A source checkout (where `generate` may write), not an installed copy."""
    return (PROJECT_ROOT / "pyproject.toml").is_file() and (PROJECT_ROOT / "generator").is_dir()


def gatekeeper_bundle_dir(profile: str) -> Path:
    return BUNDLES_DIR / "gatekeeper" / profile


GATEKEEPER_DIR = "gatekeeper"
"""bundles/gatekeeper/<profile>/: every rule gator can load, and the default install."""
EXTERNAL_DATA_DIR = "gatekeeper-external-data"
"""bundles/gatekeeper-external-data/<profile>/: the install whose override mutability asks the provider (its own
rules, which call external_data, and kustomizations that take the shared rules from bundles/gatekeeper/<profile>/)."""
EXTERNAL_DATA_VARIANT = "external-data"
"""The variant's name on the command line (`review --variant external-data`)."""


def external_data_bundle_dir(profile: str) -> Path:
    return BUNDLES_DIR / EXTERNAL_DATA_DIR / profile
