"""The run directory and its one owner: what a run writes where, and how it is read back.

- `layout`: every file and folder name of a run directory (the format; never renamed).
- `summary`: `summary.json`, one writer with declared keys.
- `checkpoints`: atomic checkpoints, the keys they hold, saved policies.
- `arrays`: the file format of replay snapshots.
- `storage` and `buckets`: a run directory in a local folder or a bucket (`--runs-dir URL`).
- `requeue`: `--resume auto`, the same command line that starts a run and continues it.
- `runs`: run directories read back for comparison (`shoal plot`, `shoal report`).

Import the module you need (`from shoal.run.checkpoints import load_latest`): this package
imports none of them, so reading `layout` costs nothing.
"""
