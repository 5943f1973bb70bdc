"""What an outage of the catalog measured (:mod:`helpers.catalog.outage`): the record
(:class:`Outage`: each append, each read, each request the gate saw, the table judged from storage
and the catalog, each problem), its printed summary, and what Delta 4.4.0 and Unity Catalog's Java
client 0.6.0 do by their sources while the catalog is down (:func:`delta_attempt_starts`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

CLIENT_TRIES = 3
"""Unity Catalog's Java client 0.6.0: tries of one call (``DEFAULT_MAX_ATTEMPTS``)."""
CLIENT_SLEEPS_S = (0.5, 1.0, 2.0)
"""Its sleep after each failed try, on average: 500 ms, doubled each time."""
DELTA_RETRIES, DELTA_FIRST_WAIT_S, DELTA_MAX_WAIT_S = 15, 0.1, 60.0
"""Delta 4.4.0's ``MAX_RETRIES_ON_TRANSIENT_ERROR`` and its back-off, first and longest sleep."""
ADD_COMMIT, REPORT, LOAD = "add-commit POST", "published-version POST", "loadTable GET"


def delta_attempt_starts() -> list[float]:
    """When each of Delta 4.4.0's attempts of one add-commit starts while the catalog stays down,
    in seconds after the first, by source: the client's tries and sleeps, then Delta's sleep."""
    starts = [0.0]
    for retry in range(DELTA_RETRIES):
        wait = min(DELTA_FIRST_WAIT_S * 2**retry, DELTA_MAX_WAIT_S)
        starts.append(round(starts[-1] + sum(CLIENT_SLEEPS_S) + wait, 1))
    return starts


@dataclass
class Outage:
    """What one outage measured; every time in seconds since the catalog went down."""

    how: str
    outage_s: float
    """The outage asked for."""
    down_s: float
    """From the first request that could fail to the gate forwarding again (its start included)."""
    appends: dict[str, list[dict]]
    """Writer -> each append: batch, attempt (1, then each rerun), start, end, told."""
    reads: list[dict]
    """Each read: start, end, and its snapshot's version and rows, or the error."""
    requests: list[dict]
    """Each request the gate saw: t, client (``w1``, ``w2``, ``reader``, ``workbook``, ``other``),
    kind, version (an add-commit's), status answered."""
    testing_flags: dict[str, str | None]
    """Each driver's testing flag (None: it ran as a team's job does)."""
    table: dict
    """The table from storage and the catalog: published, latest (the catalog's), rows
    (``writer/batch`` -> rows), added_again (data file -> the versions that add it)."""
    problems: list[str] = field(default_factory=list)

    def during(self, t: float) -> bool:
        return 0 <= t < self.down_s

    def add_commits(self, writer: str) -> list[dict]:
        return [r for r in self.requests if r["client"] == writer and r["kind"] == ADD_COMMIT]

    def recovery(self, writer: str) -> dict:
        """The writer's first commit after the outage: when the gate answered its add-commit 200
        (``landed``), and when its append was told success (``told``)."""
        after = [r["t"] for r in self.add_commits(writer) if r["status"] == 200]
        told = [a["end"] for a in self.appends[writer] if a["told"] == "success"]
        return {
            "landed": next((t for t in after if t >= self.down_s), None),
            "told": next((t for t in told if t >= self.down_s), None),
        }

    def counted(self) -> dict[str, int]:
        """``client kind status`` -> requests the gate saw during the outage."""
        seen = Counter(
            f"{r['client']} {r['kind']} {r['status']}" for r in self.requests if self.during(r["t"])
        )
        return dict(sorted(seen.items()))

    def attempts(self, writer: str) -> dict:
        """When each of Delta's attempts of the writer's add-commit began during the outage (each
        :data:`CLIENT_TRIES` requests; only a ``503`` outage lets the gate see them), in seconds
        after its ``first``: ``measured``, and ``by_source`` (:func:`delta_attempt_starts`) up to
        the first attempt after the outage."""
        sent = [r["t"] for r in self.add_commits(writer) if self.during(r["t"])]
        if not sent:
            return {"first": None, "measured": [], "by_source": []}
        predicted = delta_attempt_starts()
        after = next((i for i, t in enumerate(predicted) if sent[0] + t >= self.down_s), None)
        return {
            "first": sent[0],
            "measured": [round(t - sent[0], 1) for t in sent[::CLIENT_TRIES]],
            "by_source": predicted[: None if after is None else after + 1],
        }

    def to_dict(self) -> dict:
        """The record as JSON-able values: ``Outage(**found.to_dict())`` is the record again."""
        return asdict(self)

    def summary(self) -> str:
        return "\n".join(_summary_lines(self))


def short(told: str) -> str:
    """``success``, an error by its class (``DELTA_...``), else its first 200 characters with
    Java's package names left out."""
    named = re.search(r"\[([A-Z][A-Z0-9_]+)\]", told)
    plain = re.sub(r"\b(?:[a-z]\w*\.)+([A-Z]\w*)", r"\1", told)[:200]
    return told if told == "success" else named.group(1) if named else plain


def _at(t: float | None) -> str:
    return "never" if t is None else f"{t:.1f} s"


def _seen(read: dict | None) -> str:
    if read is None or "error" in read:
        return short(read["error"]) if read else "no read"
    return f"version {read['version']}, {read['rows']} rows"


def _summary_lines(o: Outage) -> list[str]:
    way = "the gate answered 503" if o.how == "503" else "connections refused"
    lines = [f"The catalog down {o.down_s:.1f} s ({way}); times since it went down:"]
    for who, appends in o.appends.items():
        for batch in dict.fromkeys(a["batch"] for a in appends):
            tries = [a for a in appends if a["batch"] == batch]
            failed = Counter(short(a["told"]) for a in tries[:-1])
            lines.append(
                f"  {who} batch {batch}: started at {_at(tries[0]['start'])}, told "
                f"{short(tries[-1]['told'])} at {_at(tries[-1]['end'])}"
                + "".join(f"; before that {n} x {told}" for told, n in failed.items())
            )
        back, tried = o.recovery(who), o.attempts(who)
        lines.append(
            f"  {who}: its first commit after the outage landed at {_at(back['landed'])}, told "
            f"success at {_at(back['told'])}"
        )
        if len(tried["measured"]) > 1:
            lines.append(
                f"  {who}: Delta's attempts of its add-commit began {tried['measured']} s after "
                f"its first, at {_at(tried['first'])}; by source {tried['by_source']}"
            )
    before = [r for r in o.reads if r["end"] < 0]
    during = Counter(_seen(r) for r in o.reads if o.during(r["start"]))
    after = next((r for r in o.reads if r["end"] >= o.down_s and "error" not in r), None)
    lines.append(
        f"  reader: before, {_seen(before[-1] if before else None)}; during, {dict(during)}; "
        f"first seen again at {_at(after and after['end'])}: {_seen(after)}"
    )
    lines.append(f"  requests during the outage (client, kind, status): {o.counted()}")
    lines.append(
        f"  from storage and the catalog: published {o.table['published']}, the catalog's latest "
        f"{o.table['latest']}, rows per batch {o.table['rows']}, data files added by more than "
        f"one version {o.table['added_again']}; testing flags {o.testing_flags}"
    )
    lines.append("  No problems." if not o.problems else f"  {len(o.problems)} problem(s):")
    return lines + [f"  - {p}" for p in o.problems]
