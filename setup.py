"""Import names for the folders: the distribution installs generator/ as `kubeflow_trainer_policy` and
provider/ as `kubeflow_trainer_policy_provider`, so it claims no generic top-level name. Every subpackage
is found here (a new rule folder needs no entry); the rest of the metadata is in pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = {"kubeflow_trainer_policy": "generator", "kubeflow_trainer_policy_provider": "provider"}

setup(
    package_dir=FOLDERS,
    packages=[
        f"{name}{suffix}"
        for name, folder in FOLDERS.items()
        for suffix in ["", *(f".{sub}" for sub in find_packages(folder))]
    ],
)
