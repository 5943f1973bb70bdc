"""The notebook sections the one-page answer's cells link (:mod:`helpers.page.decision`): a
:class:`Section` per heading (its notebook, number and title, with its anchor and links into the learner's
and the solutions edition), and one constant per section a cell or a row cites (``S13_5``: notebook 13,
section 5).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """A notebook section: the file in ``notebooks/``, its heading's number (``"2"``, or an appendix's
    letter: ``"appendix C"``) and the text after it."""

    notebook: str
    number: str
    title: str

    @property
    def appendix(self) -> str:
        return self.number.removeprefix("appendix ") if self.number.startswith("appendix ") else ""

    @property
    def label(self) -> str:
        return (
            f"{self.notebook[:2]} {self.number}"
            if self.appendix
            else f"{self.notebook[:2]} §{self.number}"
        )

    @property
    def heading(self) -> str:
        """The heading's text, after its hashes: ``2. Title`` or ``Appendix C · Title``."""
        return (
            f"Appendix {self.appendix} · {self.title}"
            if self.appendix
            else f"{self.number}. {self.title}"
        )

    @property
    def anchor(self) -> str:
        """The id the section's heading carries (``<a id="section-2"></a>``, ``<a id="appendix-c"></a>``)."""
        return f"appendix-{self.appendix.lower()}" if self.appendix else f"section-{self.number}"

    @property
    def target(self) -> str:
        """The notebook at the section, from ``docs/``, in the learner's edition (``student/``)."""
        return f"../student/{self.notebook}#{self.anchor}"

    @property
    def rendered(self) -> str:
        """The section in the learner's edition as a page to read, from ``docs/`` (``docs/evidence/``, written
        by :mod:`helpers.jupyter.rendered`), at the heading's anchor."""
        return f"evidence/{self.notebook.removesuffix('.ipynb')}.html#{self.anchor}"

    @property
    def solutions_target(self) -> str:
        """The same section in the solutions edition (``notebooks/``: the exercises' answers in it)."""
        return f"../notebooks/{self.notebook}#{self.anchor}"

    @property
    def link(self) -> str:
        """A link from ``docs/`` to the section in the learner's edition (``student/``), then to the same
        section in the solutions edition (``notebooks/``), each at the heading's anchor."""
        return f"[{self.label}]({self.target}) ([{SOLUTIONS_EDITION}]({self.solutions_target}))"


SOLUTIONS_EDITION = "solutions edition"
"""What a link to ``notebooks/`` says: the edition with the exercises' answers in it."""


N09 = "09_spark_multi_cluster_s3.ipynb"
S03_3 = Section("03_concurrent_writers_azure.ipynb", "3", "The same writers, retries on")
S05_2 = Section(
    "05_unsafe_rename_data_loss.ipynb", "2", "The auditor: rows, commits, object versions, orphans"
)
S06_5 = Section("06_dynamodb_lock.ipynb", "5", "Two lock mechanisms on one Delta table")
S07_1 = Section("07_transaction_retries.ipynb", "1", "Concurrent writers, the lock, retries on")
S07_2 = Section("07_transaction_retries.ipynb", "2", "Where retries must not save you")
S08_3 = Section("08_s3_conditional_writes_today.ipynb", "3", "Retries on")
S09_2 = Section(N09, "2", "One driver, several jobs, Delta Spark's default S3 log store")
S09_3 = Section(N09, "3", "Several drivers, Delta Spark's default S3 log store")
S09_4 = Section(N09, "4", "Several drivers, the DynamoDB log store")
S09_5 = Section(N09, "5", "Spark and delta-rs through one lock table")
S09_6 = Section(N09, "6", "The hazard: writers that coordinate differently")
S12_6 = Section("12_torture.ipynb", "6", "Two OPTIMIZEs at once: a finding")
S12_7 = Section("12_torture.ipynb", "7", "The full run: `make torture`")
S12_C = Section(
    "12_torture.ipynb", "appendix C", "A reader's repair fails a live commit: a finding"
)
S15_5 = Section("15_catalog_managed_tables.ipynb", "5", "Several drivers at once")
S15_8 = Section("15_catalog_managed_tables.ipynb", "8", "Maintenance, as Delta 4.4.0 does it")
S15_9 = Section("15_catalog_managed_tables.ipynb", "9", "A second engine through the same catalog")
N13 = "13_conflict_matrix.ipynb"
S13_4 = Section(N13, "4", "The retried append")
S13_5 = Section(N13, "5", "The full matrix: every engine, every pair")
S13_6 = Section(N13, "6", "Parallel backfills: one operation, partitions of their own")
