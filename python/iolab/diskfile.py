"""`--disk` as a preset name or a TOML file with a `[disk]` table (what
`iolab characterize` writes): the `[disk]` dict a spec takes, with a
`diskspecs` path made absolute (it is relative to the TOML file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class DiskFileError(ValueError):
    """The file cannot be read, is not TOML, or has no usable [disk] table."""


def is_disk_file(arg: str) -> bool:
    return arg.endswith(".toml") or Path(arg).is_file()


def load_disk(arg: str) -> dict[str, Any]:
    """The `[disk]` table of the TOML file ``arg``."""
    path = Path(arg)
    try:
        text = path.read_text()
    except OSError as e:
        raise DiskFileError(f"--disk {arg}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise DiskFileError(f"--disk {arg}: not a text file") from None
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise DiskFileError(f"--disk {arg}: not TOML: {e}") from None
    disk = doc.get("disk")
    if not isinstance(disk, dict):
        raise DiskFileError(f"--disk {arg}: no [disk] table")
    if not (("preset" in disk) ^ ("diskspecs" in disk)):
        raise DiskFileError(f"--disk {arg}: field `disk`: give exactly one of `preset` and `diskspecs`")
    out = dict(disk)
    if "diskspecs" in out:
        spec = out["diskspecs"]
        if not isinstance(spec, str):
            raise DiskFileError(f"--disk {arg}: field `disk.diskspecs`: expected a file name")
        p = Path(spec)
        out["diskspecs"] = str(p if p.is_absolute() else (path.resolve().parent / p))
    return out


def disk_label(disk: dict[str, Any]) -> str:
    if "preset" in disk:
        return str(disk["preset"])
    return Path(str(disk["diskspecs"])).stem
