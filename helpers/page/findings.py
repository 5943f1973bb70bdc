"""Which finding applies to which setting and release: the findings' version table,
``findings/versions.csv`` (one line per finding and the commit paths it was measured on).

A finding applies to a row of the answer (:class:`helpers.page.answer_evidence.Row`) when one of the row's
commit paths (:data:`helpers.page.answer_evidence.PATHS`) is one of the finding's, and the release chosen lies
from the first to the last release measured affected (a release between two affected ones is taken as
affected; a release outside that range is not known to be). deltalake's release is the one a reader chooses;
Delta Spark's and Delta Kernel's is the one the workbook measures (``boundaries.DELTA_SPARK``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from helpers.ground import config
from helpers.page import boundaries

TABLE = config.ROOT / "findings" / "versions.csv"
JVM_LIBRARIES = ("Delta Spark", "Delta Kernel")
"""Libraries whose one release here is Delta Spark's (:data:`helpers.page.boundaries.DELTA_SPARK`)."""


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class Finding:
    """One line of the findings' version table."""

    folder: str
    library: str
    first: str
    last: str
    paths: tuple[str, ...]
    affected: tuple[str, ...]
    not_affected: tuple[str, ...]

    def covers(self, release: str) -> bool:
        """Whether ``release`` (of :attr:`library`) lies from the first to the last release affected."""
        return version_key(self.first) <= version_key(release) <= version_key(self.last)

    def span(self) -> str:
        """The releases affected, as a page names them."""
        return self.first if self.first == self.last else f"{self.first}–{self.last}"


def load(path=TABLE) -> list[Finding]:
    """Every line of the table, in its order."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            Finding(
                line["finding"],
                line["library"],
                line["first_affected"],
                line["last_affected"],
                tuple(line["paths"].split()),
                tuple(line["affected_measured"].split()),
                tuple(line["not_affected_measured"].split()),
            )
            for line in csv.DictReader(handle)
        ]


def release_of(library: str, deltalake_release: str) -> str:
    """The release a finding of ``library`` is checked against, for a reader who chose ``deltalake_release``."""
    return boundaries.DELTA_SPARK.version if library in JVM_LIBRARIES else deltalake_release


def within(row, low: str, high: str, table: list[Finding] | None = None) -> list[Finding]:
    """The findings that apply to ``row`` at some release from ``low`` to ``high`` (deltalake's; ``""``: no
    bound), each folder once: what a paragraph on the whole row names."""
    found = {}
    for finding in load() if table is None else table:
        if not set(finding.paths) & set(row.paths):
            continue
        if finding.library in JVM_LIBRARIES:
            hit = finding.covers(boundaries.DELTA_SPARK.version)
        else:
            hit = (not low or version_key(finding.last) >= version_key(low)) and (
                not high or version_key(finding.first) <= version_key(high)
            )
        if hit:
            found.setdefault(finding.folder, finding)
    return list(found.values())


def applying(row, release: str, table: list[Finding] | None = None) -> list[Finding]:
    """The findings that apply to ``row`` at deltalake release ``release``."""
    return within(row, release, release, table)
