"""Import names for the folders: the distribution installs generator/ as `kubeflow_trainer_policy` and
provider/ as `kubeflow_trainer_policy_provider`, so it claims no generic top-level name. Every subpackage
is found here (a new rule folder needs no entry); the rest of the metadata is in pyproject.toml.

The generated bundles/ and policies/ and the engine's requirements/ ship as data of the package
(`kubeflow_trainer_policy.bundles` etc.), so a wheel install finds them without the checkout."""

from setuptools import find_packages, setup

FOLDERS = {"kubeflow_trainer_policy": "generator", "kubeflow_trainer_policy_provider": "provider"}
DATA = {f"kubeflow_trainer_policy.{folder}": folder for folder in ("bundles", "policies", "requirements")}

setup(
    package_dir={**FOLDERS, **DATA},
    packages=[
        *(
            f"{name}{suffix}"
            for name, folder in FOLDERS.items()
            for suffix in ["", *(f".{sub}" for sub in find_packages(folder))]
        ),
        *DATA,
    ],
)
