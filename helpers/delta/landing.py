"""The landing data: the small files every writer appends, one batch of ten rows per file.

The seeds' function was triggered by a file landing in a bucket and appended it to a Delta table.
The workbook's batches are deterministic, so any row tells which batch (and so which writer) it
came from: batch ``b`` holds ids ``b*100+1 .. b*100+10``. Batches 1-8 ship in ``data/landing/``;
any other batch is generated on demand into ``build/landing/``::

    landing.batch(3)            # batch 3 as a pyarrow Table (id int32, name string)
    landing.landing_file(3)     # the path of its file
    landing.batch_of_id(305)    # 3

This module runs in every writer era's Python (standard library and pyarrow only).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

from helpers.ground import config

ROWS_PER_BATCH = 10
BATCH_ID_STRIDE = 100
"""Batch ``b`` holds ids ``b*100+1 .. b*100+10``, so any row tells which batch (writer) it came from."""
MAX_BATCH = (2**31 - 1) // BATCH_ID_STRIDE - 1
LANDING_FORMATS = ("jsonl", "csv")
LANDING_COLUMNS = (("id", "int32"), ("name", "string"))
SHIPPED_DIR = config.DATA_DIR / "landing"
"""Batches 1-8, as committed files (the notebooks show them)."""
GENERATED_DIR = config.BUILD_DIR / "landing"
"""Every other batch, written the first time it is asked for."""

_FIRST_NAMES = (
    "Aroha",
    "Bilal",
    "Chiara",
    "Dmitri",
    "Esi",
    "Farah",
    "Gustavo",
    "Hana",
    "Ines",
    "Jomo",
    "Kaito",
    "Leila",
    "Mateo",
    "Nadia",
    "Oskar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sione",
    "Tamar",
    "Umar",
    "Valentina",
    "Wiremu",
    "Ximena",
    "Yusuf",
    "Zofia",
    "Amara",
    "Bjorn",
    "Camille",
)
_LAST_NAMES = (
    "Ngata",
    "Haddad",
    "Rossi",
    "Volkov",
    "Mensah",
    "Rahimi",
    "Pereira",
    "Sato",
    "Moreau",
    "Kamau",
    "Tanaka",
    "Karimi",
    "Garcia",
    "Novak",
    "Lindqvist",
    "Iyer",
    "Dubois",
    "Silva",
    "Tupou",
    "Levi",
    "Farouk",
    "Costa",
    "Parata",
    "Ruiz",
    "Demir",
    "Kowalska",
    "Okafor",
)


class LandingError(ValueError):
    """A batch number or a landing file is unusable; the message says which and why."""


def batch_ids(batch: int) -> range:
    """The ids of a batch: ``batch*100+1 .. batch*100+10``. Raises LandingError outside 1..MAX_BATCH."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise LandingError(f"batch must be a whole number from 1 to {MAX_BATCH}, not {batch!r}")
    first = batch * BATCH_ID_STRIDE + 1
    return range(first, first + ROWS_PER_BATCH)


def batch_of_id(row_id: int) -> int:
    """The batch a row id belongs to (inverse of :func:`batch_ids`)."""
    return (int(row_id) - 1) // BATCH_ID_STRIDE


def rows_per_batch(ids) -> dict[int, int]:
    """How many of these row ids each batch holds (None ids are left out)."""
    counts: dict[int, int] = {}
    for row_id in ids:
        if row_id is not None:
            batch = batch_of_id(row_id)
            counts[batch] = counts.get(batch, 0) + 1
    return counts


def landing_rows(batch: int) -> list[dict[str, Any]]:
    """The rows of a batch, always the same: ``{"id": 101, "name": "Aroha Ngata"}``, ..."""
    return [
        {
            "id": i,
            "name": f"{_FIRST_NAMES[(i * 7) % len(_FIRST_NAMES)]} {_LAST_NAMES[(i * 11) % len(_LAST_NAMES)]}",
        }
        for i in batch_ids(batch)
    ]


def landing_format(batch: int) -> str:
    """Odd batches land as JSON lines, even ones as CSV (the seeds' function took both)."""
    return LANDING_FORMATS[(batch - 1) % len(LANDING_FORMATS)]


def landing_file_name(batch: int) -> str:
    """``batch-001.jsonl``, ``batch-002.csv``, ..."""
    return f"batch-{batch:03d}.{landing_format(batch)}"


def write_landing_file(batch: int, folder: str | os.PathLike) -> Path:
    """Write one batch into ``folder`` (created if missing) and return its path. Deterministic:
    the same batch always gives the same bytes."""
    path = Path(folder) / landing_file_name(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = landing_rows(batch)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", newline="", encoding="utf-8") as out:
        if landing_format(batch) == "jsonl":
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        else:
            table = csv.DictWriter(
                out, fieldnames=[name for name, _ in LANDING_COLUMNS], lineterminator="\n"
            )
            table.writeheader()
            table.writerows(rows)
    os.replace(tmp, path)
    return path


def landing_file(batch: int, *, generated_dir: str | os.PathLike | None = None) -> Path:
    """The landing file of a batch: the shipped one in ``data/landing/`` (batches 1-8), else one
    generated deterministically into ``generated_dir`` (default ``build/landing``)."""
    shipped = SHIPPED_DIR / landing_file_name(batch)
    if shipped.is_file():
        return shipped
    folder = Path(generated_dir) if generated_dir else GENERATED_DIR
    path = folder / landing_file_name(batch)
    return path if path.exists() else write_landing_file(batch, folder)


def landing_schema():
    """The pyarrow schema of the landing files and of the tables the writers append to."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in LANDING_COLUMNS])


def read_landing_file(path: str | os.PathLike):
    """Load a landing file (``.jsonl``/``.json`` or ``.csv``) into a pyarrow Table with the landing
    schema (``id`` int32, ``name`` string). Raises LandingError for another extension or a file
    that does not fit the schema, FileNotFoundError if it is missing."""
    import pyarrow as pa

    path = Path(path)
    schema = landing_schema()
    if not path.exists():  # a file, or anything that reads like one (a named pipe)
        raise FileNotFoundError(f"Landing file {path} does not exist.")
    try:
        if path.suffix in (".jsonl", ".json"):
            import pyarrow.json as pj

            table = pj.read_json(
                path,
                parse_options=pj.ParseOptions(
                    explicit_schema=schema, unexpected_field_behavior="error"
                ),
            )
        elif path.suffix == ".csv":
            import pyarrow.csv as pc

            table = pc.read_csv(
                path,
                convert_options=pc.ConvertOptions(
                    column_types=schema, include_columns=schema.names
                ),
            )
        else:
            raise LandingError(
                f"Landing file {path} is neither .jsonl nor .csv; the writer reads only those."
            )
    except pa.ArrowInvalid as error:
        raise LandingError(
            f"Landing file {path} does not fit the schema id:int32, name:string ({error})."
        ) from None
    return table.select(schema.names).cast(schema)


def batch(number: int):
    """Batch ``number`` as a pyarrow Table, read from its landing file (shipped or generated)."""
    return read_landing_file(landing_file(number))
