"""Bad user input (:class:`InputError`: one line, exit code 2) and a real system failing under a
command (:class:`RunFailure`: one line, exit code 1), as the CLI reports them."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input (a value, a file, a spec that cannot be built), with a message naming the field."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}" if field else message)


class RunFailure(RuntimeError):
    """A real system the command drives failed (a lab's kernel command, its routing daemons):
    not bad input; the CLI prints one line naming the part and exits 1."""


def os_error(e: OSError, path: object = None) -> InputError:
    """An operating-system error (no space, name too long, read-only, permission, a symlink
    loop, I/O) as one line naming the path: ``path`` if given, else the one the error names."""
    import errno

    where = path if path is not None else e.filename
    if where is None:
        where = ""
    elif path is None and e.filename2 is not None:
        where = f"{e.filename} -> {e.filename2}"
    why = e.strerror or errno.errorcode.get(e.errno or 0, "") or type(e).__name__
    return InputError(str(where), why[:1].lower() + why[1:])


def system_error(e: InputError | OSError | MemoryError | RecursionError) -> InputError:
    """What the CLI says: bad input as it is, or the system's refusal: :func:`os_error`, or
    the input was too large for memory or nested too deeply."""
    if isinstance(e, InputError):
        return e
    if isinstance(e, OSError):
        return os_error(e)
    if isinstance(e, MemoryError):
        return InputError("memory", "ran out: the input is larger than this machine holds")
    return InputError("input", "nested too deeply to read")
