"""Buckets by URL (`s3://`, `gs://`, and any other fsspec URL such as `memory://` or
`file://`): resolved, checked to answer, and their errors said in one paragraph. fsspec and the
bucket's package (s3fs, gcsfs: the extras `shoal[s3]`, `shoal[gcs]`) are imported only here,
when a URL is given. `shoal.run.storage` builds run directories on them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal.errors import ConfigError, StorageError

__all__ = [
    "Bucket",
    "check_lasting",
    "is_url",
    "join",
    "lasting_only",
    "open_bucket",
    "unreachable",
    "write_text",
]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs"}
# Filesystems that live in one Python process's memory: gone when it exits.
_IN_PROCESS = ("memory",)
# Set by `lasting_only` (the `shoal` command): this process is one command, whose end ends them.
_lasting_only = False


def lasting_only() -> None:
    """Refuse in-process filesystems (`memory://`) from now on, in `open_bucket`: called by the
    command line's entry point, where the process is one command. From Python, a `memory://`
    run directory lives as long as the process (tests, a notebook) and stays allowed."""
    global _lasting_only
    _lasting_only = True


def check_lasting(location: Any, what: str = "--runs-dir") -> None:
    """A ConfigError for `location` on an in-process filesystem (`memory://`), for a command
    that runs in a process of its own: what it wrote there would vanish at its exit."""
    match = _URL.match(location) if isinstance(location, str) else None
    if match is not None and match.group(1).lower() in _IN_PROCESS:
        raise ConfigError(
            f"{what} {location} is fsspec's in-memory filesystem, which lives inside one "
            "Python process: a shoal command starts with it empty and it vanishes when the "
            "command exits, so a run there could never be read again. Pass a local folder or "
            "a bucket that outlives the process (s3://BUCKET/runs, gs://BUCKET/runs, "
            "file:///shared/runs); memory:// is for runs made and read in one Python process "
            "(shoal.train(..., run={'runs_dir': 'memory://runs'}))."
        )


def is_url(location: Any) -> bool:
    """Whether `location` names a bucket (or any fsspec URL) rather than a local path."""
    return isinstance(location, str) and _URL.match(location) is not None


def join(location: str | os.PathLike[str], *names: str) -> str | Path:
    """`location / name...`, for a URL or a path."""
    if is_url(location):
        return "/".join([str(location).rstrip("/"), *names])
    return Path(location).joinpath(*names)


@dataclass(frozen=True)
class Bucket:
    """A URL resolved by fsspec: its filesystem and its path there."""

    fs: Any
    path: str
    url: str

    def key(self, rel: str) -> str:
        return f"{self.path.rstrip('/')}/{rel}"

    def child(self, name: str) -> Bucket:
        return Bucket(self.fs, self.key(name), f"{self.url.rstrip('/')}/{name}")

    def files(self) -> dict[str, int]:
        """Every object under this prefix: its path relative to the prefix, and its size."""
        try:
            self.fs.invalidate_cache()  # another process may have written since it was listed
            found = self.fs.find(self.path, detail=True)
        except FileNotFoundError:
            return {}
        except Exception as err:
            raise unreachable(self.url, err) from None
        prefix = self.path.rstrip("/") + "/"
        return {
            name[len(prefix) :]: int(info.get("size") or 0)
            for name, info in found.items()
            if name.startswith(prefix) and info.get("type", "file") != "directory"
        }


def open_bucket(url: str, what: str = "--runs-dir") -> Bucket:
    """The bucket at `url`, checked to answer: a ConfigError for a URL fsspec cannot use or
    whose package is missing, a StorageError for a bucket that cannot be reached or read."""
    scheme = _URL.match(url).group(1).lower()  # type: ignore[union-attr]
    if _lasting_only:
        check_lasting(url, what)
    try:
        import fsspec

        # Not a cached instance: one made before the credentials or endpoint changed.
        fs, path = fsspec.core.url_to_fs(url, skip_instance_cache=True)
    except ImportError as err:
        extra = _EXTRAS.get(scheme)
        how = f"pip install 'shoal[{extra}]'" if extra else f"install fsspec's {scheme} package"
        raise ConfigError(
            f"{what} {url} needs a package that is not installed ({err}). Install it with "
            f"`{how}`, or pass a local folder."
        ) from None
    except (ValueError, TypeError) as err:
        raise ConfigError(
            f"{what} {url} is not a URL shoal can write to ({err}). Pass a local folder or a "
            "bucket URL such as s3://BUCKET/runs, gs://BUCKET/runs or file:///shared/runs."
        ) from None
    if "file" in _protocols(fs):
        fs.auto_mkdir = True  # a folder's files need their folders; a bucket's keys do not
    bucket = Bucket(fs, path, url)
    _check_reachable(bucket, what)
    return bucket


def _check_reachable(bucket: Bucket, what: str) -> None:
    fs, path = bucket.fs, bucket.path
    if "file" in _protocols(fs):
        try:
            fs.makedirs(path, exist_ok=True)
        except OSError as err:
            raise ConfigError(
                f"Cannot create {what} {bucket.url}: {err.strerror or err}. Pass a folder you "
                "can write to."
            ) from None
        return
    top = path.strip("/").split("/")[0]
    if not top:
        raise ConfigError(
            f"{what} {bucket.url} names no bucket; pass one with a folder in it, e.g. "
            "s3://BUCKET/runs."
        )
    try:
        fs.ls(top if "memory" not in _protocols(fs) else "/", detail=False)
    except FileNotFoundError:
        raise ConfigError(
            f"{what} {bucket.url}: the bucket {top!r} does not exist (or these credentials "
            "cannot see it). Create it first, or pass another bucket."
        ) from None
    except Exception as err:
        raise unreachable(bucket.url, err, what) from None


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def unreachable(url: str, err: BaseException, what: str = "The run at") -> StorageError:
    reason = (str(err).strip().splitlines() or [""])[0]
    scheme = _URL.match(url).group(1).lower()  # type: ignore[union-attr]
    hint = _CREDENTIALS.get(_EXTRAS.get(scheme, ""), "the filesystem's credentials")
    return StorageError(
        f"{what} {url} cannot be reached or read ({type(err).__name__}: {reason:.200}). "
        f"Check the network and {hint}, then run the command again."
    )


_CREDENTIALS = {
    "s3": "the bucket's credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
    "AWS_PROFILE; AWS_ENDPOINT_URL for an S3-compatible store such as MinIO)",
    "gcs": "the bucket's credentials (GOOGLE_APPLICATION_CREDENTIALS, or `gcloud auth "
    "application-default login`)",
}


def write_text(url: str, text: str) -> None:
    """Put `text` at `url` in one request (an object appears whole or not at all)."""
    bucket = open_bucket(url, "The file")
    try:
        bucket.fs.pipe_file(bucket.path, text.encode())
    except Exception as err:
        raise unreachable(url, err, "The file") from None
