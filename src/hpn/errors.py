"""The one error type for bad user input: the CLI turns it into one line and exit code 2."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input (a value, a file, a spec that cannot be built), with a message naming the field."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)
