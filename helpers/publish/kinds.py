"""Each kind of run ``make publish`` takes: what it must show before it is published (the checks
its own command makes), where it goes in ``data/``, and what else shows it.

| kind | made by | published to |
| --- | --- | --- |
| ``bench`` | ``make bench`` | ``data/full_runs/bench/`` |
| ``torture`` | ``make torture`` | ``data/full_runs/torture/`` |
| ``producers`` | ``make producers`` | ``data/full_runs/producers/`` |
| ``matrix`` | ``make matrix`` | ``data/conflict_matrix.csv``, ``data/conflict_matrix_meta.json`` |
| ``matrix-mixed`` | ``make matrix-mixed`` | ``data/conflict_matrix_mixed_dynamodb.csv`` and its meta |
| ``lost_answer`` | ``make lost-answer`` | ``data/lost_answer.csv``, ``data/lost_answer_meta.json`` |
| ``catalog`` | ``make catalog-run`` | ``data/catalog_run.json`` |

A run's kind is the folder its command writes it under, ``build/<kind>/<name>/``
(:func:`kind_of`); a run of the mixed matrix, under ``build/matrix/`` too, by its columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers.bench import run as bench_run
from helpers.bench import stats
from helpers.ground import config
from helpers.ground.checks import Checklist
from helpers.catalog import long_run as catalog_run
from helpers.lost_answer import run as lost_answer
from helpers.matrix import mixed, outputs
from helpers.producers import results as producers
from helpers.runs import full_runs
from helpers.torture import plan, verdict
from helpers.torture import run as torture_run


class PublishError(RuntimeError):
    """A run that is not published: no such folder, no kind known for it, or its checks failed;
    the message says what to do. Nothing in ``data/`` has changed."""


@dataclass(frozen=True)
class Kind:
    name: str
    make: str
    """The command that makes the run."""
    problems: Callable[[Path], list[str]]
    """What keeps a run's folder from being published, as its own command checks it ([] when nothing does)."""
    copy: Callable[[Path], list[Path]]
    """Copies the run into ``data/``; returns what it wrote."""
    then: str
    """What else shows the committed run, to refresh by hand after publishing."""


def _when_finished(problems: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
    """``problems`` of a finished run's folder (its ``meta.json`` is written last), else why it is not one."""

    def found(folder: Path) -> list[str]:
        if not full_runs.finished(folder):
            return [f"no meta.json in {config.shown(folder)}: the run did not finish"]
        return problems(folder)

    return found


def _checked(record) -> list[str]:
    """``record(check)`` fills a :class:`Checklist`; [] if every check held, else its report."""
    check = Checklist()
    record(check)
    return [] if check.passed else [check.report()]


def _bench_problems(folder: Path) -> list[str]:
    """What ``python -m helpers.bench`` checks of its run (:func:`helpers.bench.stats.check_runs`)."""
    found = bench_run.load(folder)
    return _checked(lambda check: stats.check_runs(check, found.runs, found.meta["appends"]))


def _torture_problems(folder: Path) -> list[str]:
    """What ``make torture`` promises of its run (:func:`helpers.torture.verdict.check_run`), with the
    full run's commits per safe protocol."""
    found = torture_run.load(folder)
    return _checked(
        lambda check: verdict.check_run(check, found, min_commits=plan.FULL_RUN_MIN_COMMITS)
    )


def _producers_problems(folder: Path) -> list[str]:
    """Every row landed exactly once and no racing writer lost a commit (:func:`helpers.producers.results.problems`)."""
    return producers.problems(producers.load(folder))


def _full_run(kind: str) -> Callable[[Path], list[Path]]:
    return lambda folder: [full_runs.publish(kind, folder)]


AFTER = "refresh its committed outputs, `make outputs NB={nb}`, then `make student`"
KINDS = {
    kind.name: kind
    for kind in (
        Kind(
            "bench",
            full_runs.MAKE["bench"],
            _when_finished(_bench_problems),
            _full_run("bench"),
            "notebook 11 shows the run: " + AFTER.format(nb="11"),
        ),
        Kind(
            "torture",
            full_runs.MAKE["torture"],
            _when_finished(_torture_problems),
            _full_run("torture"),
            "notebook 12 shows the run: " + AFTER.format(nb="12") + "; README and "
            "docs/torture.md quote its figures (tests/test_docs.py holds them to it)",
        ),
        Kind(
            "producers",
            full_runs.MAKE["producers"],
            _when_finished(_producers_problems),
            lambda folder: [producers.publish(folder)],
            "notebook 14 shows the run: " + AFTER.format(nb="14") + "; docs/benchmark.md quotes "
            "its tables (helpers.producers.figures.benchmark_tables writes them)",
        ),
        Kind(
            "matrix",
            "make matrix",
            outputs.problems,
            outputs.publish,
            "notebook 13 shows the run: " + AFTER.format(nb="13"),
        ),
        Kind(
            "matrix-mixed",
            "make matrix-mixed",
            mixed.problems,
            mixed.publish,
            "nothing, the answer pages are all that show this run",
        ),
        Kind(
            "lost_answer",
            "make lost-answer",
            _when_finished(lost_answer.folder_problems),
            lost_answer.publish,
            "notebook 15 and the findings quote it; the answer pages show it",
        ),
        Kind(
            "catalog",
            "make catalog-run",
            _when_finished(catalog_run.folder_problems),
            catalog_run.publish,
            "notebook 15 shows the run: " + AFTER.format(nb="15") + "; the answer pages quote it",
        ),
    )
}


def kind_of(folder: Path) -> Kind:
    """The kind of run in ``folder``, from where its command writes it: ``build/<kind>/<name>/``; a
    folder under ``build/matrix/`` whose CSV has the mixed run's columns is ``matrix-mixed``."""
    try:  # exactly two parts under build/, or a ValueError
        kind, _name = folder.resolve().relative_to(config.BUILD_DIR.resolve()).parts
    except ValueError:
        kind = None
    csv = folder / "matrix.csv"
    if kind == "matrix" and csv.is_file():
        with csv.open(encoding="utf-8") as handle:
            if handle.readline().split(",")[0] == mixed.CSV_COLUMNS[0]:
                kind = "matrix-mixed"
    if kind not in KINDS:
        raise PublishError(
            f"{config.shown(folder)} is not a run's folder of a known kind, build/<kind>/<name>: "
            f"name its kind (make publish RUN=... KIND=<kind>; one of {', '.join(KINDS)})"
        )
    return KINDS[kind]


def check(kind: Kind, folder: Path) -> None:
    """Raise :class:`PublishError`, saying what to do, unless ``folder`` holds a run of ``kind`` that
    passes its checks."""
    if not folder.is_dir():
        raise PublishError(
            f"no folder {config.shown(folder)}: `{kind.make}` makes a {kind.name} run under "
            f"build/ first, then publish its folder"
        )
    problems = kind.problems(folder)
    if problems:
        raise PublishError(
            f"{config.shown(folder)} is not published, nothing in data/ changed: "
            + "; ".join(problems)
            + f"\nPublish a run whose checks pass (`{kind.make}` makes one)."
        )
