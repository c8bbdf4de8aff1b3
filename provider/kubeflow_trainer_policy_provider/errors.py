"""The provider's input errors: a file, flag or document the user must fix (one line, exit 2).

`trainer-policy` raises the same class (generator.errors re-exports it), so both command lines report
bad input alike."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input: names the file and, where known, the field."""

    def __init__(self, source: str, message: str, field: str | None = None):
        self.source = source
        self.field = field
        self.message = message
        where = f"{source}: {field}" if field else source
        super().__init__(f"{where}: {message}")
