"""Errors the command line reports as one line and exit code 2, and the exit codes themselves."""

from __future__ import annotations

# The provider stands alone (no generator import), so the class lives there; re-exported as ours.
from kubeflow_trainer_policy_provider.errors import InputError as InputError

EXIT_OK = 0
EXIT_FAILED = 1
"""Only a real denial (review) or a real check failure (test, bundle verify, generate --check)."""
EXIT_ERROR = 2
"""Any input error or internal error: the command could not decide."""


class EngineError(Exception):
    """The policy engine failed: a module did not compile or evaluation raised an error."""


class TemplateError(EngineError):
    """A ConstraintTemplate could not be loaded or evaluated; names the template."""

    def __init__(self, template: str, message: str):
        self.template = template
        self.message = message
        super().__init__(f"template {template}: {message}")
