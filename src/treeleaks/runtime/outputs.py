"""Output files written safely: checked before the run, never over an input, each other or
(unless forced) a previous run's output, and written all or nothing, each file replaced
atomically."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from treeleaks.runtime.errors import TreeleaksError


class OutputError(TreeleaksError):
    """An output file cannot be written where asked; the message names the path."""


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: equal once `.`, `..` and symlinks are resolved, or
    hard links to one file (checked when both exist). A symlink loop is no file."""
    try:
        if a.resolve() == b.resolve():
            return True
    except RuntimeError:  # a symlink loop (Python < 3.13)
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def check_outputs(inputs: Iterable[Path], outputs: Iterable[Path], force: bool = False) -> None:
    """Refuse, before any work, outputs that could not be written (missing or read-only
    folder, a read-only file, a folder or device in the way), that name an input or each
    other, or, unless ``force``, that already exist: a file there holds a previous run's
    output (or something else), which a run never replaces without being told to. A
    folder output is checked through the files the run would write in it, so an empty
    or unrelated folder passes."""
    inputs = list(inputs)
    seen: list[Path] = []
    for target in outputs:
        _check_writable(target)
        for source in inputs:
            if same_file(target, source):
                raise OutputError(f"output {str(target)!r} would overwrite the input "
                                  f"{str(source)!r}; choose another file name")
        if any(same_file(target, other) for other in seen):
            raise OutputError(f"two outputs name the same file {str(target)!r}; give each "
                              "its own name")
        if not force and target.is_file():
            raise OutputError(f"{str(target)!r} already exists (a previous run's output?); "
                              "pass --force to replace it, or choose another path")
        seen.append(target)


def write_outputs(files: Mapping[Path, str | bytes]) -> None:
    """Write each text (or bytes, e.g. a PNG) to its path, all or nothing.

    Every text first goes to a temporary file beside its target; only when all are written
    are they renamed over their targets (atomic per file). On any failure the temporary
    files and the outputs already renamed in this call are removed, so no truncated file,
    stray temporary, or half of a result is left behind. An output that is a symlink is
    written through to the file it points to, as ``open`` would. Raises `OutputError`
    naming the path that failed.
    """
    staged: list[tuple[Path, Path, Path]] = []  # (as named, its resolved target, temporary)
    renamed: list[Path] = []
    current = Path()
    try:
        for current, text in files.items():
            target = current.resolve()
            staged.append((current, target, _stage(target, text)))
        for named, target, temp in staged:
            current = named
            os.replace(temp, target)
            renamed.append(target)
    except BaseException as exc:
        for _, _, temp in staged:
            temp.unlink(missing_ok=True)
        for target in renamed:
            target.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {str(current)!r}: {exc.strerror or exc}; none "
                              "of this run's output files were kept") from exc
        raise


def _check_writable(target: Path) -> None:
    """The target's folder exists and takes new files; the target, if present, is a file."""
    try:
        folder = target.resolve().parent
    except RuntimeError:  # Python < 3.13
        raise OutputError(f"cannot write {str(target)!r}: it is a symbolic link loop") from None
    problem = _folder_problem(folder) or _target_problem(target)
    if problem is not None:
        raise OutputError(f"cannot write {str(target)!r}: {problem}")
    try:  # the only reliable test (permissions, read-only mounts, quotas, running as root)
        _stage(target.resolve(), "").unlink()
    except OSError as exc:
        raise OutputError(f"cannot write {str(target)!r}: its folder does not take new "
                          f"files ({exc.strerror or exc})") from exc


def _folder_problem(folder: Path) -> str | None:
    """Why a file cannot be written in ``folder`` (not a folder, missing), or None."""
    if folder.exists() and not folder.is_dir():
        return f"{str(folder)!r} is not a folder"
    if not folder.is_dir():
        return "its folder does not exist"
    return None


def _target_problem(target: Path) -> str | None:
    """Why ``target`` cannot be replaced (a folder, not a regular file, read-only), or
    None."""
    if target.is_dir():
        return "it is a folder; name a file"
    if target.exists() and not target.is_file():
        return "it is not a regular file"
    if target.exists() and not os.access(target, os.W_OK):  # renaming over it would work
        return "the file is read-only"
    return None


def _stage(target: Path, text: str | bytes) -> Path:
    """``text`` (UTF-8 when a string) in a new temporary file beside ``target``, flushed to
    disk, with the target's permissions when it exists (else the usual ones for a new
    file)."""
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temp, stat.S_IMODE(target.stat().st_mode))
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp
