"""What the failure scenarios (:mod:`helpers.catalog.failures`) record: each ``add-commit``
request as the gate saw it (:class:`AddCommit`), and what one scenario measured (:class:`Outcome`,
with its printed summary).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AddCommit:
    """One ``add-commit`` request, as the gate saw it."""

    number: int
    """Its place among the add-commits the gate saw (1 = the first)."""
    version: int | None
    reported_published: int | None
    """The ``latest-published-version`` the request reported (``set-latest-backfilled-version``)."""
    status: int | None = None
    """What the server answered (None: the request never reached it)."""
    answered: int | None = None
    """What the client got (differs from ``status`` when the gate lost the answer; None: its
    connection was closed without an answer)."""


@dataclass
class Outcome:
    """What one scenario measured (raw facts; the notebook asserts on them)."""

    scenario: str
    told: dict[str, str]
    """Each append (or writer) -> what Delta told it: ``success`` or the error's first line."""
    add_commits: list[AddCommit]
    published: list[int]
    """Versions with ``_delta_log/<v>.json``."""
    catalog_latest: int | None
    """The catalog's latest version (None: the catalog does not know the table)."""
    unpublished: list[int]
    """Versions the catalog ratified that storage has not published."""
    rows: dict[str, int]
    """``writer/batch`` -> rows of the table with that tag."""
    problems: list[str]
    facts: dict = field(default_factory=dict)
    """What else the scenario recorded (e.g. the state between two steps)."""

    def summary(self) -> str:
        gate = ", ".join(
            f"#{c.number} v{c.version} (published {c.reported_published}): server {c.status}, "
            f"client {c.answered or 'no answer, connection closed'}"
            for c in self.add_commits
        )
        lines = [f"{self.scenario}:"]
        lines += [f"  told {who}: {what}" for who, what in self.told.items()]
        lines += [
            f"  add-commits at the gate: {gate or 'none'}",
            f"  published {self.published}; the catalog's latest {self.catalog_latest}",
            f"  ratified, not published {self.unpublished}",
            f"  rows per batch: {self.rows}",
        ]
        lines += [f"  {key}: {value}" for key, value in self.facts.items()]
        lines.append(
            "  no problems" if not self.problems else f"  {len(self.problems)} problem(s):"
        )
        return "\n".join(lines + [f"  - {p}" for p in self.problems])
