"""Errors the command reports as one line (no backtrace)."""


class UserError(Exception):
    """A problem with what the user asked for: a file, a field, an option."""
