"""Errors the command line reports as one line and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input: names the file and, where known, the field."""

    def __init__(self, source: str, message: str, field: str | None = None):
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {message}")


class EngineError(Exception):
    """The policy engine failed: a module did not compile or evaluation raised an error."""


class TemplateError(EngineError):
    """A ConstraintTemplate could not be loaded or evaluated; names the template."""

    def __init__(self, template: str, message: str):
        self.template = template
        self.message = message
        super().__init__(f"template {template}: {message}")
