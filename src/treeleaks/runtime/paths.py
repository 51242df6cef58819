"""Input paths named as what they are when they cannot be read: a symbolic link loop, a
dangling link, a folder, a named pipe, a device or an unreadable file is said to be so in
one line, not reported as missing (nor read from: a pipe can block forever)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_KINDS = {stat.S_ISFIFO: "a named pipe (FIFO)", stat.S_ISSOCK: "a socket",
          stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"}


def unreadable(path: str | Path, what: str) -> str | None:
    """Why ``path`` cannot be read as the ``what`` file (one line naming both, with the
    fix), or None when it is a readable regular file."""
    path = Path(path)
    name = f"{what} {str(path)!r}"
    try:
        mode = path.stat().st_mode  # follows links
    except OSError as exc:
        return _stat_failed(path, name, exc)
    if stat.S_ISDIR(mode):
        return f"{name} is a folder; give the {what} inside it"
    for test, kind in _KINDS.items():
        if test(mode):
            return f"{name} is {kind}, not a regular file; save it to a file and give that"
    if not os.access(path, os.R_OK):
        return f"{name} is not readable (permission denied); give read access (chmod u+r)"
    return None


def _stat_failed(path: Path, name: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return (f"{name} is a symbolic link loop (its links point back at each other); "
                "give the file itself")
    if exc.errno == errno.ENOENT:
        if path.is_symlink():
            return (f"{name} is a symbolic link to {os.readlink(path)!r}, which does not "
                    "exist")
        return f"{name} does not exist"
    if exc.errno == errno.EACCES:
        return f"{name} cannot be reached (permission denied on a folder on its way)"
    if exc.errno == errno.ENOTDIR:
        return f"{name} does not exist (a part of its path is a file, not a folder)"
    return f"cannot access {name}: {exc.strerror}"
