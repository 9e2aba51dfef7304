"""Errors the command reports as one line (no backtrace)."""


class UserError(Exception):
    """A problem with what the user asked for: a file, a field, an option."""


def one_line(message: str) -> str:
    """An error message on one line: control characters from the input
    (a newline in a name) are shown escaped."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in message)


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def finite_positive(text: str) -> float:
    """argparse type: a finite number above 0."""
    import argparse
    import math

    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return x
