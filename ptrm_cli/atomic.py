"""Writes that either happen completely or not at all.

Files are written to a temporary sibling and renamed into place (`os.replace` is atomic on
POSIX), so an interrupted run never leaves a half-written file under the final name.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to `path`; on success it replaces `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it 0600; the result is an ordinary file
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: str | os.PathLike, obj) -> None:
    write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike):
    """Yield a temporary directory next to `path`; on success it replaces `path` whole.
    An interrupted build leaves only a hidden `.name.*.tmp` folder, never `path` itself."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700; the result is an ordinary folder
    try:
        yield tmp
        if not path.exists():
            os.replace(tmp, path)
        elif _exchange(tmp, path):  # one step: `path` is always the old or the new folder
            shutil.rmtree(tmp, ignore_errors=True)
        else:  # no atomic exchange here: a kill between the two renames leaves `.name.old`
            old = old_copy(path)
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def ordinary_modes(root: Path) -> None:
    """Give `root` and everything below it the modes a plain mkdir/open would have: mkdtemp
    makes 0700 folders and safetensors writes 0600 files, which others on the machine could
    not read."""
    umask = _umask()
    root.chmod(0o777 & ~umask)
    for f in root.rglob("*"):
        f.chmod((0o777 if f.is_dir() else 0o666) & ~umask)


def _umask() -> int:
    """The process umask (reading it means setting it: put it straight back)."""
    umask = os.umask(0)
    os.umask(umask)
    return umask


def old_copy(path: Path) -> Path:
    """Where `atomic_dir` keeps the previous folder for a moment when it cannot exchange."""
    return path.with_name(f".{path.name}.old")


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system
    or the filesystem has no such call."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def refuse_file(out: str | os.PathLike, hint: str | None = None) -> None:
    """`--out` names a folder the command writes whole: a file there is refused, not replaced."""
    from .errors import PtrmError

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise PtrmError(f"--out {out} is a file", hint=hint)


def write_problem(path: str | os.PathLike, e: OSError) -> str:
    """Why `path` could not be written, said so that the user can act on it: a file standing
    where a folder must be, else the system's reason (a full disk, no permission)."""
    file = next((a for a in reversed(Path(path).parents) if a.exists() and not a.is_dir()), None)
    return f"{file} is a file, not a folder" if file else e.strerror or str(e)


@contextlib.contextmanager
def exclusive(path: str | os.PathLike, what: str):
    """Hold the one writer's lock on `path` (a file or folder a job writes) for the block; a
    second job on the same path fails at once with a PtrmError instead of mixing its output in.
    The lock is an flock on a hidden sibling (`.NAME.lock`, which says the holder's pid),
    released when the process ends, however it ends. A job that ends normally removes it, while
    still holding it; a job that opened it just before then finds the file it locked gone from
    the path and takes a new one, so no two jobs ever hold the path."""
    import fcntl

    from .errors import PtrmError

    path = Path(path)
    # absolute: the file removed at the end is the one taken, whatever the cwd is by then
    lock = Path(os.path.abspath(path.parent / f".{path.name}.lock"))
    while True:
        try:  # a user's path: a file where a folder must be, no permission, a read-only place
            path.parent.mkdir(parents=True, exist_ok=True)
            f = open(lock, "a+")
        except OSError as e:
            raise PtrmError(f"{path}: cannot write there ({write_problem(path, e)})",
                            hint=f"give this {what} a path in a folder you can write") from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            f.close()
            raise PtrmError(f"{path}: another ptrm job is writing it ({holder})",
                            hint=f"wait for it to end, or give this {what} another path") \
                from None
        if _same_file(f, lock):
            break
        f.close()  # the job before removed it after this open: lock the one at the path now
    with f:
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        try:
            yield
        finally:
            if _same_file(f, lock):  # (someone's hand may have removed it meanwhile)
                with contextlib.suppress(OSError):
                    lock.unlink()
            fcntl.flock(f, fcntl.LOCK_UN)


def _same_file(f, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(f.fileno()), os.stat(path))
    except FileNotFoundError:
        return False
