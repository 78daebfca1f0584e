"""Moved to `shoal.run.storage`. This module re-exports its public names, so old imports keep
working; import from `shoal.run.storage` in new code."""

from shoal.run.storage import (
    CONFIG_FILE,
    STAGING_ENV,
    SUMMARY_FILE,
    Bucket,
    RunStore,
    UploadError,
    create_run,
    fetch,
    is_url,
    join,
    open_bucket,
    open_run,
    read_files,
    staging_folder,
    write_text,
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
