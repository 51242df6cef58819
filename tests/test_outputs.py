"""Output files: refused when they would overwrite an input or each other, written all or
nothing, and never left truncated or half-written."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from treeleaks.runtime import outputs
from treeleaks.runtime.outputs import OutputError, check_outputs, write_outputs


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.json"
    path.write_text('{"the": "model"}')
    return path


@pytest.mark.parametrize(
    "alias",
    ["./model.json", "sub/../model.json", "link.json", "hard.json"],
)
def test_an_output_naming_the_input_by_any_path_is_refused(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alias: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.json").symlink_to(model)
    os.link(model, tmp_path / "hard.json")
    with pytest.raises(OutputError, match="would overwrite the input"):
        check_outputs([Path("model.json")], [Path(alias)])


def test_two_outputs_naming_one_file_are_refused(model: Path, tmp_path: Path) -> None:
    (tmp_path / "link.csv").symlink_to(tmp_path / "out.csv")  # dangling until written
    with pytest.raises(OutputError, match="same file"):
        check_outputs([model], [tmp_path / "out.csv", tmp_path / "link.csv"])
    check_outputs([model], [tmp_path / "out.csv", tmp_path / "other.csv"])


@pytest.mark.parametrize(
    ("target", "fragment"),
    [("missing/out.csv", "its folder does not exist"), ("model.json/out.csv", "is not a folder"),
     (".", "it is a folder"), ("/dev/null", "not a regular file")],
)
def test_outputs_that_cannot_be_written_are_refused_before_the_run(
    model: Path, tmp_path: Path, target: str, fragment: str
) -> None:
    with pytest.raises(OutputError, match=fragment) as refused:
        check_outputs([model], [tmp_path / target])
    assert str(tmp_path / target) in str(refused.value)
    assert listing(tmp_path) == ["model.json"]  # the probe file is gone


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_folder_is_refused_before_the_run(model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    with pytest.raises(OutputError, match="does not take new files"):
        check_outputs([model], [folder / "out.csv"])


def test_a_read_only_mount_is_refused_before_the_run(
    model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only file system refuses even root: simulated, as tests cannot mount one."""
    def read_only(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(outputs.os, "open", read_only)
    with pytest.raises(OutputError, match=r"out\.csv'.*does not take new files.*Read-only"):
        check_outputs([model], [tmp_path / "out.csv"])


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only files")
def test_a_read_only_file_is_not_replaced(model: Path, tmp_path: Path) -> None:
    """Renaming over a read-only file works; writing to it would not, so neither do we."""
    kept = tmp_path / "kept.csv"
    kept.write_text("keep me\n")
    kept.chmod(0o444)
    with pytest.raises(OutputError, match="read-only"):
        check_outputs([model], [kept])


def test_outputs_are_written_and_replace_old_files_keeping_their_mode(tmp_path: Path) -> None:
    old = tmp_path / "old.csv"
    old.write_text("stale,content,that,is,longer\n" * 10)
    old.chmod(0o640)
    write_outputs({old: "a,b\n1,2\n", tmp_path / "new.json": "{}\n"})
    assert old.read_text() == "a,b\n1,2\n" and (tmp_path / "new.json").read_text() == "{}\n"
    assert old.stat().st_mode & 0o777 == 0o640
    assert listing(tmp_path) == ["new.json", "old.csv"]


def test_a_symlinked_output_is_written_through_to_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    write_outputs({tmp_path / "link.csv": "new\n"})
    assert (tmp_path / "link.csv").is_symlink() and (tmp_path / "real.csv").read_text() == "new\n"


def test_a_full_disk_leaves_old_files_whole_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "recon.csv"
    old.write_text("previous,result\n")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outputs.os, "fsync", disk_full)
    with pytest.raises(OutputError, match=r"cannot write '.*recon\.csv': No space left"):
        write_outputs({old: "a,b\n" * 1000})
    assert old.read_text() == "previous,result\n"
    assert listing(tmp_path) == ["recon.csv"]


def test_a_failure_on_a_later_file_removes_the_earlier_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No CSV of a run that failed is left to look like a success."""
    real_replace = os.replace

    def replace(source: Path, target: Path) -> None:
        if Path(target).name == "summary.json":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        real_replace(source, target)

    monkeypatch.setattr(outputs.os, "replace", replace)
    csv, summary = tmp_path / "recon.csv", tmp_path / "summary.json"
    with pytest.raises(OutputError, match=r"summary\.json'.*Permission denied"):
        write_outputs({csv: "a,b\n", summary: "{}\n"})
    assert listing(tmp_path) == []


def test_an_existing_output_is_refused_unless_forced(model: Path, tmp_path: Path) -> None:
    """A file at an output's path (a previous run's) is never replaced without --force; an
    empty or unrelated folder is fine, as is a dangling symlink."""
    old = tmp_path / "recon.csv"
    old.write_text("previous,result\n")
    with pytest.raises(OutputError, match=r"'.*recon\.csv' already exists.*--force"):
        check_outputs([model], [tmp_path / "fresh.json", old])
    check_outputs([model], [old], force=True)
    check_outputs([model], [tmp_path / "report.json"])  # the folder holds other files only
    assert old.read_text() == "previous,result\n"
