"""Where a run directory lives: a local folder, or a bucket (`--runs-dir s3://...`).

Everything that writes a run (checkpoints, replay snapshots, metrics, TensorBoard, videos,
trackers) writes a local folder, `RunStore.local`. For a bucket URL (`s3://`, `gs://`, and any
other fsspec URL such as `memory://` or `file://`) that folder is a staging copy in the system's
temp folder (or `$SHOAL_STAGING_DIR`), and `RunStore.sync` makes the bucket hold what it holds:
at the start, after every checkpoint and at the end. Appending a metrics row or a TensorBoard
event to an object in place is impossible (objects are written whole), so rows reach the bucket
with each checkpoint, not one by one.

A bucket has no rename, so a checkpoint is uploaded whole to a temporary key (`.step-....tmp-*`,
a name `list_checkpoints` never matches) and then moved to its own name: on S3 and GCS the move
is a server-side copy, and the copy appears whole or not at all, so a reader that lists the
bucket never sees a torn checkpoint, whenever the upload is cut. The replay snapshot files a
checkpoint names go up before it and the pruned files are deleted after it, as on disk
(`shoal.run.checkpoints`). A kill between the put and the move leaves a temporary key, which the
next run resuming from the bucket deletes. fsspec and the bucket's package (s3fs, gcsfs: the
extras `shoal[s3]`, `shoal[gcs]`) are imported only when a URL is given.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from shoal.errors import CheckpointError, ConfigError, StorageError
from shoal.run.buckets import Bucket, is_url, join, open_bucket, unreachable, write_text
from shoal.run.layout import (
    CHECKPOINT_DIR,
    CHECKPOINT_NAME,
    CONFIG_FILE,
    SNAPSHOT_NAME,
    SUMMARY_FILE,
    VIDEO_DIR,
)

__all__ = [
    "CONFIG_FILE",
    "STAGING_ENV",
    "SUMMARY_FILE",
    "Bucket",
    "RunStore",
    "UploadError",
    "create_run",
    "fetch",
    "is_url",
    "join",
    "open_bucket",
    "open_run",
    "read_files",
    "staging_folder",
    "write_text",
]

STAGING_ENV = "SHOAL_STAGING_DIR"


def _is_checkpoint(rel: str) -> bool:
    """Whether `rel` (relative to the run directory) is a complete checkpoint."""
    folder, _, name = rel.rpartition("/")
    return folder == CHECKPOINT_DIR and CHECKPOINT_NAME.match(name) is not None


def _is_heavy(rel: str) -> bool:
    """Files pulled only when needed: a resume pulls the snapshot its checkpoint names, and
    nothing reads the videos back."""
    folder, _, name = rel.partition("/")
    return (folder == CHECKPOINT_DIR and SNAPSHOT_NAME.match(name) is not None) or (
        folder == VIDEO_DIR and bool(name)
    )


class UploadError(StorageError):
    """The bucket did not take the run's files; the staging folder keeps them."""


class RunStore:
    """A run directory: `local` is the folder shoal writes; `where` is what a user names (the
    folder, or the bucket URL it is staged for)."""

    def __init__(self, local: Path, bucket: Bucket | None = None, staged: bool = False) -> None:
        self.local = local
        self.bucket = bucket
        self.staged = staged  # `local` is a staging copy, removed by `close`
        # What the bucket holds of `local`: relative path -> (size, mtime) when uploaded or
        # pulled. A file changed since is uploaded again; one gone from `local` is deleted.
        self._synced: dict[str, tuple[int, int]] = {}

    @property
    def remote(self) -> bool:
        return self.bucket is not None

    @property
    def where(self) -> Path | str:
        return self.bucket.url if self.bucket is not None else self.local

    def say(self, text: str) -> str:
        """`text` with the staging folder's path replaced by the URL it stands for."""
        return text.replace(str(self.local), str(self.where)) if self.remote else text

    def sync(self) -> None:
        """Make the bucket hold what `local` holds (nothing to do for a local run)."""
        bucket = self.bucket
        if bucket is None:
            return
        now = _local_files(self.local)
        changed = [rel for rel, stamp in now.items() if self._synced.get(rel) != stamp]
        # Snapshots and rows before the checkpoints that name them; summary.json, which names
        # the newest checkpoint, last.
        order = sorted(changed, key=lambda rel: (_is_checkpoint(rel), rel))
        order.sort(key=lambda rel: rel == SUMMARY_FILE)
        try:
            for rel in order:
                try:
                    if _is_checkpoint(rel):
                        self._upload_whole(rel)
                    else:
                        bucket.fs.put_file(str(self.local / rel), bucket.key(rel))
                except FileNotFoundError:
                    if (self.local / rel).exists():
                        raise  # the bucket's side is missing
                    continue  # replaced or removed since it was listed: the next sync sees it
                self._synced[rel] = now[rel]
            for rel in [rel for rel in self._synced if rel not in now]:
                _remove(bucket, rel)
                del self._synced[rel]
        except Exception as err:
            raise UploadError(self._upload_failed(err)) from None

    def _upload_whole(self, rel: str) -> None:
        """Put the checkpoint at a temporary key, then move it to its name (module docstring)."""
        bucket = self.bucket
        assert bucket is not None
        name = PurePosixPath(rel)
        temp = str(name.with_name(f".{name.name}.tmp-{secrets.token_hex(4)}"))
        bucket.fs.put_file(str(self.local / rel), bucket.key(temp))
        bucket.fs.mv(bucket.key(temp), bucket.key(rel))

    def _upload_failed(self, err: BaseException) -> str:
        reason = (str(err).strip().splitlines() or [""])[0]
        return (
            f"Uploading the run to {self.where} failed ({type(err).__name__}: {reason:.200}). "
            f"The bucket keeps its newest complete checkpoint (a partial upload is never taken "
            f"for one): once it answers, `shoal train --resume {self.where}` goes on from "
            f"there. What was written since is kept in {self.local}."
        )

    def pull(self, rels: Iterable[str]) -> None:
        """Download these files of the run from the bucket into `local` (missing ones are
        skipped: whoever reads them says what is missing)."""
        bucket = self.bucket
        if bucket is None:
            return
        for rel in rels:
            target = self.local / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                bucket.fs.get_file(bucket.key(rel), str(target))
            except FileNotFoundError:
                continue
            except Exception as err:
                raise unreachable(bucket.url, err) from None
            stat = target.stat()
            self._synced[rel] = (stat.st_size, stat.st_mtime_ns)

    def close(self) -> None:
        """Remove the staging folder (after the final `sync`)."""
        if self.staged:  # and the temp folder `staging_folder` made for it
            shutil.rmtree(self.local.parent, ignore_errors=True)

    def discard(self) -> None:
        """Remove the run everywhere: a new run that failed before its first checkpoint."""
        shutil.rmtree(self.local, ignore_errors=True)
        self.close()
        if self.bucket is not None:
            # Nothing uploaded, or the bucket gone: nothing to remove.
            with contextlib.suppress(Exception):
                self.bucket.fs.rm(self.bucket.path, recursive=True)


def _remove(bucket: Bucket, rel: str) -> None:
    with contextlib.suppress(FileNotFoundError):  # already gone: what was wanted
        bucket.fs.rm_file(bucket.key(rel))


def _local_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Files under `folder` but the temp files of writes in progress (`.NAME...tmp`)."""
    found = {}
    for path in folder.rglob("*"):
        if path.name.startswith(".") or not path.is_file():
            continue
        stat = path.stat()
        found[path.relative_to(folder).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return found


def staging_folder(name: str) -> Path:
    """A fresh local folder named `name` to stage a run of a bucket (`$SHOAL_STAGING_DIR`,
    else the system's temp folder)."""
    parent = os.environ.get(STAGING_ENV) or None
    try:
        if parent is not None:
            Path(parent).mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="shoal-staging-", dir=parent)) / name
        folder.mkdir()
    except OSError as err:
        raise StorageError(
            f"Cannot create a staging folder for the run in {parent or tempfile.gettempdir()}: "
            f"{err.strerror or err}. Set {STAGING_ENV} to a folder with room that you can "
            "write to."
        ) from None
    return folder


def create_run(runs_dir: str, name: str, fixed_name: bool, config_text: str) -> RunStore:
    """A new run directory `runs_dir/name` (`name-2`, `name-3`... if taken, unless
    `fixed_name`), holding `config_text` as its config; nothing is left if this fails."""
    if is_url(runs_dir):
        return _create_in_bucket(runs_dir, name, fixed_name, config_text)
    from shoal.config import write_atomically

    root = Path(runs_dir)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--runs-dir {root} is a file, not a folder; pass a folder for runs.")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _unwritable(root, err) from None
    run_dir, suffix = root / name, 1
    while True:
        try:
            run_dir.mkdir()
            break
        except FileExistsError:
            if fixed_name:
                raise _taken(run_dir) from None
            suffix += 1
            run_dir = root / f"{name}-{suffix}"
        except OSError as err:
            raise _unwritable(root, err) from None
    try:
        write_atomically(run_dir / CONFIG_FILE, config_text)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # no run directory without its config
        raise
    return RunStore(run_dir)


def _create_in_bucket(runs_dir: str, name: str, fixed_name: bool, config_text: str) -> RunStore:
    root = open_bucket(runs_dir)
    bucket, suffix = root.child(name), 1
    # A bucket has no mkdir to claim a name: two runs started at the same second with the same
    # name could both take it, so give concurrent jobs distinct --run-name values.
    while bucket.files():
        if fixed_name:
            raise _taken(bucket.url)
        suffix += 1
        bucket = root.child(f"{name}-{suffix}")
    store = RunStore(staging_folder(bucket.url.rstrip("/").rsplit("/", 1)[-1]), bucket, True)
    try:
        (store.local / CONFIG_FILE).write_text(config_text)
        store.sync()  # config.yaml: the bucket's run directory exists from here on
    except BaseException:
        store.discard()
        raise
    return store


def open_run(
    location: str | os.PathLike[str], must_exist: bool = True, writing: bool = True
) -> RunStore:
    """The run at `location`. For a URL, its files are pulled into a staging folder, but for
    replay snapshots and videos (`pull` those when needed). `must_exist`: a CheckpointError if
    the bucket holds no run there. `writing` (the run continues): temporary keys of an upload a
    kill cut are deleted; a reader leaves them, as they may be a running upload's."""
    if not is_url(location):
        return RunStore(Path(location))
    url = str(location).rstrip("/")
    bucket = open_bucket(url, "The run directory")
    files = bucket.files()
    if must_exist and CONFIG_FILE not in files:
        raise CheckpointError(
            f"{url} is not a shoal run directory (no {CONFIG_FILE} there). Pass a run directory "
            "created by `shoal train --runs-dir URL`, e.g. s3://BUCKET/runs/ppo-CartPole-v1-"
            "20260101-120000."
        )
    store = RunStore(staging_folder(url.rsplit("/", 1)[-1]), bucket, True)
    stale = [rel for rel in files if PurePosixPath(rel).name.startswith(".")]
    store.pull(rel for rel in files if rel not in stale and not _is_heavy(rel))
    for rel in stale if writing else ():
        # Read-only credentials can still read the run; the name is ignored anyway.
        with contextlib.suppress(Exception):
            _remove(bucket, rel)
    return store


def fetch(location: str) -> tuple[Path, RunStore]:
    """A local copy of what `location` (a URL) names, for reading: a run directory, one of its
    checkpoint files (pulled with its run), or a saved policy file. `store.close()` removes it."""
    url = location.rstrip("/")
    parent, _, name = url.rpartition("/")
    bucket = open_bucket(url, "The policy at")
    try:
        is_file = bucket.fs.isfile(bucket.path)
    except Exception as err:
        raise unreachable(url, err) from None
    if not is_file:
        store = open_run(url, writing=False)
        return store.local, store
    if parent.endswith(f"/{CHECKPOINT_DIR}"):  # a checkpoint is read with its run's config
        store = open_run(parent.rpartition("/")[0], writing=False)
        return store.local / CHECKPOINT_DIR / name, store
    store = RunStore(staging_folder("policy"), staged=True)  # read only: no bucket to sync
    try:
        bucket.fs.get_file(bucket.path, str(store.local / name))
    except Exception as err:
        store.close()
        raise unreachable(url, err) from None
    return store.local / name, store


def read_files(url: str, wanted: Callable[[str], bool]) -> RunStore:
    """A staging folder holding the files of the run at `url` whose relative paths `wanted`
    accepts, for reading; `close()` removes it."""
    bucket = open_bucket(url, "The run at")
    store = RunStore(staging_folder(url.rstrip("/").rsplit("/", 1)[-1]), bucket, staged=True)
    try:
        store.pull(rel for rel in bucket.files() if wanted(rel))
    except BaseException:
        store.close()
        raise
    return store


def _taken(run_dir: Path | str) -> ConfigError:
    return ConfigError(
        f"Run directory {run_dir} already exists. Resume it with "
        f"`shoal train --resume {run_dir}` or choose another --run-name."
    )


def _unwritable(root: Path, err: OSError) -> ConfigError:
    return ConfigError(
        f"Cannot create a run directory in --runs-dir {root}: {err.strerror or err}. "
        "Pass a --runs-dir you can write to."
    )
