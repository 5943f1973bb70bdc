"""Where everything of a many-producers table lives, and what its names say.

Producers write Parquet data files straight into the table's folder, under ``produced/``, and hand
each one over with a *ready marker*: an empty object under ``_queue/ready/`` whose name says which
producer, which sequence number, how many rows, how many bytes, and which data file::

    produced/p03-00000012-1f2e3d4c.parquet           # producer 3's 12th file (one attempt: its token)
    _queue/ready/p03-00000012-1f2e3d4c-10-1534.ready  # handed over: 10 rows, 1,534 bytes

The committer lists at most a batch of ``_queue/ready/`` (one LIST, no GET;
:mod:`helpers.producers.queue`), commits those files as one transaction, then deletes their
markers; clean-up deletes the markers of files the table holds (a committer killed before it
deleted them), and data files under ``produced/`` that neither the table nor a marker names (a
producer killed mid-file).
A reader never sees ``produced/`` files the log does not name, and nothing under ``_queue/``
(Delta reads only the files its log names). The same names work on a local folder, Azure Blob
and S3: everything goes through deltalake's own object store (:class:`deltalake.fs.DeltaStorageHandler`)
with the table's storage options.

Rows: producer ``p`` writes ``rows`` rows per file; row ``r`` of its file ``s`` has id
``p * 10**9 + s * 10**3 + r``, so every row says whose file it came from.

Standard library, pyarrow and deltalake only: this module runs in the producer and committer processes.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass

PRODUCED_DIR = "produced"
READY_DIR = "_queue/ready"
ID_PRODUCER, ID_SEQ = 10**9, 10**3
MAX_ROWS_PER_FILE = ID_SEQ - 1
MAX_SEQ = ID_PRODUCER // ID_SEQ - 1
APP_ID_PREFIX = "workbook-committer"

_MARKER = re.compile(r"^p(\d{2})-(\d{8})-([0-9a-f]{8})-(\d+)-(\d+)\.ready$")
_DATA = re.compile(r"^produced/p(\d{2})-(\d{8})-([0-9a-f]{8})\.parquet$")


@dataclass(frozen=True)
class Staged:
    """One data file handed over (what its ready marker says)."""

    producer: int
    seq: int
    token: str
    rows: int
    size: int

    @property
    def data_path(self) -> str:
        return data_path(self.producer, self.seq, self.token)

    @property
    def marker_path(self) -> str:
        return f"{READY_DIR}/p{self.producer:02d}-{self.seq:08d}-{self.token}-{self.rows}-{self.size}.ready"


def new_token() -> str:
    """A fresh token for one attempt at writing a file (a rewritten file never reuses a name)."""
    return secrets.token_hex(4)


def data_path(producer: int, seq: int, token: str) -> str:
    if not (1 <= producer <= 99 and 1 <= seq <= MAX_SEQ):
        raise ValueError(f"producer must be 1..99 and seq 1..{MAX_SEQ}, not {producer}, {seq}")
    return f"{PRODUCED_DIR}/p{producer:02d}-{seq:08d}-{token}.parquet"


def parse_marker(name: str) -> Staged | None:
    """A ready marker's name (its last part) read back; None for anything else."""
    found = _MARKER.match(name.rsplit("/", 1)[-1])
    if found is None:
        return None
    producer, seq, token, rows, size = found.groups()
    return Staged(int(producer), int(seq), token, int(rows), int(size))


def producer_and_seq(path: str) -> tuple[int, int] | None:
    """``(producer, seq)`` of a data file's path relative to the table; None if it is not a produced file."""
    found = _DATA.match(path)
    return (int(found.group(1)), int(found.group(2))) if found else None


def row_ids(producer: int, seq: int, rows: int) -> range:
    if not 1 <= rows <= MAX_ROWS_PER_FILE:
        raise ValueError(f"rows per file must be 1..{MAX_ROWS_PER_FILE}, not {rows}")
    first = producer * ID_PRODUCER + seq * ID_SEQ
    return range(first + 1, first + rows + 1)


def expected_ids(files_per_producer: dict[int, int], rows: int) -> set[int]:
    """Every id the producers make: producer -> how many files it produces."""
    return {
        i
        for p, files in files_per_producer.items()
        for s in range(1, files + 1)
        for i in row_ids(p, s, rows)
    }


def schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.int64()),
            ("producer", pa.int32()),
            ("seq", pa.int32()),
            ("payload", pa.string()),
        ]
    )


def file_rows(producer: int, seq: int, rows: int):
    """The rows of producer ``producer``'s file ``seq``, as a pyarrow Table (the same on every attempt)."""
    import pyarrow as pa

    ids = list(row_ids(producer, seq, rows))
    return pa.Table.from_pydict(
        {
            "id": ids,
            "producer": [producer] * rows,
            "seq": [seq] * rows,
            "payload": [f"event {i}" for i in ids],
        },
        schema=schema(),
    )


def filesystem(table_uri: str, storage_options: dict[str, str] | None):
    """A pyarrow file system rooted at the table's folder, through deltalake's object store (so the
    same storage options reach the same store as the commits)."""
    import pyarrow.fs as pafs
    from deltalake.fs import DeltaStorageHandler

    if "://" not in str(table_uri) or str(table_uri).startswith(
        "file://"
    ):  # a local table's folder must exist
        os.makedirs(str(table_uri).removeprefix("file://"), exist_ok=True)
    return pafs.PyFileSystem(DeltaStorageHandler(str(table_uri), dict(storage_options or {})))


def listed(fs, folder: str) -> list[str]:
    """Paths of the files under ``folder`` (relative to the table), sorted; [] if there is none."""
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(folder, recursive=True, allow_not_found=True))
    return sorted(i.path.lstrip("/") for i in infos if i.type == pafs.FileType.File)


def touch(fs, path: str) -> None:
    """Create an empty object (a marker: its name is its content)."""
    fs.open_output_stream(path).close()


def ready(fs) -> list[Staged]:
    """Every data file handed over and not yet cleaned up, in (producer, seq) order."""
    found = (parse_marker(p) for p in listed(fs, READY_DIR))
    return sorted((s for s in found if s is not None), key=lambda s: (s.producer, s.seq, s.token))


def app_id(committer: str) -> str:
    """The committer's application id in the table's ``txn`` actions."""
    return f"{APP_ID_PREFIX}-{committer}"
