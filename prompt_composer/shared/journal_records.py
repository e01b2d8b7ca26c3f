"""Which staging folders this tool wrote: one record per import journal, kept in the user's state folder, outside
any checkout.

A staging folder inside a docs folder says nothing about who made it: a repository can commit one, ``COMMITTED``
and staged files included, as easily as a killed import can leave one. So before an import stages anything it
records, here, the staging folder's docs folder (its real path), its name, its device and inode, its owner and a
random nonce, and puts the same nonce in the staging folder as ``NONCE``. Recovery acts only on a staging folder
whose record matches in every field (:func:`matches`); a clone of a repository gets new inodes, and its author
cannot know the nonce, so a committed staging folder is never recognised. The record goes when the journal does.

The state folder is ``$PROMPT_COMPOSER_STATE``, else ``$XDG_STATE_HOME/prompt-composer``, else
``~/.local/state/prompt-composer``; records are in its ``journals/``, which must be a folder of this user that no
one else can write (mode 0700 when made here): records in any other folder are not trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import ImporterError
from .nofollow import read_small

STATE_ENV = "PROMPT_COMPOSER_STATE"
_JOURNALS = "journals"
_MAX_RECORD = 16 * 1024


@dataclass(frozen=True)
class Record:
    """What the writer of one staging folder knows about it (see the module docstring)."""

    folder: str  # the docs folder's real path
    staging: str  # the staging folder's name in it
    device: int
    inode: int
    uid: int
    nonce: str

    def describes(self, info: os.stat_result, nonce: bytes | None) -> bool:
        """Whether the staging folder whose ``fstat`` is ``info`` and whose ``NONCE`` file holds ``nonce`` is the
        one recorded: the same device, inode and owner, the owner this process's user, no one else able to write
        into it, and the same nonce."""
        import hmac  # only when a journal is read: not on every start

        return (
            stat.S_ISDIR(info.st_mode)
            and (info.st_dev, info.st_ino, info.st_uid) == (self.device, self.inode, self.uid)
            and info.st_uid == os.geteuid()
            and not info.st_mode & 0o022
            and nonce is not None
            and hmac.compare_digest(nonce, self.nonce.encode())
        )


def state_dir() -> Path:
    """The user's state folder for prompt-composer (see the module docstring)."""
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "prompt-composer"


def journals_dir() -> Path:
    """Where the records are: ``<state folder>/journals``."""
    return state_dir() / _JOURNALS


def _private(path: Path) -> bool:
    """A real folder (not a symlink) of this user that no one else can write into."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022


def _record_name(folder: str, staging: str) -> str:
    return hashlib.sha256(f"{folder}\0{staging}".encode()).hexdigest()[:32] + ".json"


def new_nonce() -> str:
    return os.urandom(16).hex()  # secrets.token_hex's own source, without importing secrets on every start


def save(record: Record) -> None:
    """Write ``record`` (atomically: a new file renamed into place). An :class:`ImporterError` saying how to fix it
    when the state folder cannot be written: then nothing may be staged, since no recovery could trust it."""
    where = journals_dir()
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if not _private(where):
            raise ImporterError(
                f"{where}: the import journal records must be in a folder of yours that no one else can write "
                f"(chmod 700 it, or set {STATE_ENV} to another folder); nothing was written"
            )
        fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            name = _record_name(record.folder, record.staging)
            partial = f".{name}.{os.urandom(4).hex()}.partial"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            out = os.open(partial, flags, 0o600, dir_fd=fd)
            with os.fdopen(out, "w", encoding="utf-8") as stream:
                json.dump(asdict(record), stream)
            os.rename(partial, name, src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ImporterError(
            f"{where}: cannot record the import's journal there: {exc.strerror or exc} (set {STATE_ENV} to a "
            "folder you can write); nothing was written"
        ) from None


def load(folder: str, staging: str) -> Record | None:
    """The record of the staging folder ``staging`` of ``folder`` (a real path), or ``None``: none was made, or
    it is unreadable, or the journals folder is not private (see :func:`save`)."""
    where = journals_dir()
    if not _private(where):
        return None
    try:
        fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        data = read_small(_record_name(folder, staging), fd, _MAX_RECORD)
    finally:
        os.close(fd)
    if data is None:
        return None
    try:
        fields = json.loads(data)
        record = Record(**fields)
    except (ValueError, TypeError, RecursionError):
        return None
    if (record.folder, record.staging) != (folder, staging):
        return None
    return record


def forget(folder: str, staging: str) -> None:
    """Remove the record of a staging folder that is gone (nothing if there is none)."""
    with suppress(OSError):
        os.unlink(journals_dir() / _record_name(folder, staging))
