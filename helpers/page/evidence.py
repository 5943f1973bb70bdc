"""What decides a cell of the one-page answer (:mod:`helpers.page.decision`): pairs of the conflict matrix
(:class:`MatrixCells`), one check of a notebook's Checks cell (:class:`Check`) or nothing
(:class:`Unmeasured`); and the :class:`Row` of a setting that holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.page.notebook_sections import Section


@dataclass(frozen=True)
class MatrixCells:
    """Matrix pairs of some engines (names or fnmatch patterns; those absent from the CSV skipped)."""

    engines: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    note: str = ""
    also: tuple[str, tuple[tuple[str, str], ...]] = ()
    """``(condition, pairs)``: more pairs the cell states apart, under that condition, where their verdict
    differs from the cell's."""


@dataclass(frozen=True)
class Check:
    """A check's name as the notebook's Checks code spells it (an f-string's literal text), and what it
    shows; ``every_run=False``: asserted only when a full run (``make torture``) is present."""

    section: Section
    check: str
    verdict: str
    versions: str
    note: str = ""
    every_run: bool = True
    claim: str = ""
    """Words of the section (its prose or committed output) that state what the cell says; a test
    checks they are there and that they say the cell's verdict."""
    refuses: tuple[str, ...] = ()
    """For a verdict of :data:`helpers.page.matrix_verdicts.BY_DESIGN`: the operations the setting never
    allows, as a sentence names them (the matrix's operations by their words in
    :data:`helpers.page.matrix_verdicts.OP_WORDS`)."""


@dataclass(frozen=True)
class Unmeasured:
    note: str = ""


@dataclass(frozen=True)
class Row:
    """``versions``: the releases the setting stands for (cells name those measured); ``name``: short,
    for "what to do"; ``engines``: the matrix engines of every column ``cells`` (column key -> Check or
    Unmeasured) does not give; ``loses``: the commit protocol loses appends, so every cell loses data on
    that one evidence; ``remedy``: matrix pairs of the retried append made safe by ``remedy_how``;
    ``other_from_matrix``: each pair is one engine against the other, so sharing is the worst of all;
    ``other_engine``: the engine its "other" cell measured beside it, where that is not the other of
    Delta Spark and deltalake."""

    key: str
    engine: str
    versions: str
    store: str
    setting: str
    name: str
    engines: tuple[str, ...] = ()
    cells: dict = field(default_factory=dict)
    loses: Check | None = None
    remedy: tuple[tuple[str, str], ...] = ()
    remedy_how: str = ""
    other_from_matrix: bool = False
    other_engine: str = ""
    measured_as: str = ""
    """How the matrix's engines stand for the row's releases, where they are not the releases themselves."""
    paths: tuple[str, ...] = ()
    """The commit paths the row's writers take (:data:`PATHS`), by which a finding applies to it."""

    def span(self) -> tuple[str, str]:
        """The row's deltalake releases as ``(low, high)``, inclusive (``""``: no bound); for a row of Delta
        Spark alone, its release twice."""
        part = self.versions.split(" + ")[-1]
        if part.startswith("up to "):
            return "", part.removeprefix("up to ")
        low, _, high = part.partition("–")
        return low, high or low


PATHS = {
    "s3-unsafe-rename": "deltalake on S3: copy, then delete (the unsafe rename)",
    "s3-dynamodb-lease": "deltalake on S3 with the dynamodb_lock crate's lease (up to 0.14.0)",
    "s3-dynamodb-lock": "deltalake on S3 with its DynamoDB log store (0.15.0 to 1.6.0)",
    "s3-conditional-put": "deltalake on S3 by conditional put",
    "azure-put-if-absent": "deltalake on Azure Blob: a blob created only if absent",
    "local-put-if-absent": "deltalake on local disk: a file created only if absent",
    "spark-s3-single-driver": "Delta Spark's default S3 log store",
    "spark-s3-dynamodb": "Delta Spark's S3DynamoDBLogStore",
    "spark-catalog": "Delta Spark or Delta Kernel through a catalog that ratifies commits",
}
"""The commit paths of the rows, as ``findings/versions.csv`` names them."""
