"""The student edition: every notebook with its exercises' answers taken out, by nbgrader.

Command line (the Makefile calls these)::

    python -m helpers.jupyter.student build   # notebooks/ -> student/  (make student)
    python -m helpers.jupyter.student check   # fails, naming each file, if student/ is not what build writes

An exercise is two code cells near the end of a notebook, both carrying nbgrader's cell
metadata: an *answer cell* (``solution: true``) whose answer sits between ``### BEGIN SOLUTION``
and ``### END SOLUTION``, then a locked *check cell* (``grade: true``) that asserts the answer.
nbgrader's ``generate_assignment`` (its ``ClearSolutions``, ``ClearOutput``, ``LockCells`` and
``ComputeChecksums`` preprocessors) turns each answer into ``# YOUR CODE HERE`` /
``raise NotImplementedError()`` and clears every output, but for the cells tagged
``committed-results`` (:data:`KEEP_OUTPUTS_TAG`): they only display results committed in ``data/``
(the full benchmark, torture run and conflict matrix), which a learner's run would show the same,
so the student copy keeps their outputs and the figures the prose describes are there before any
cell runs. The answers stay where they are: in
notebooks/, which ``make test`` executes, so each check cell passes there with its answer in
place, and the written answers to the discussion questions stay in notebooks/solutions/.

:func:`exercises` lists a notebook's exercises; tests/test_student.py checks that student/ is
current and that putting each answer back into it gives the notebook ``make test`` runs.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from helpers.ground import config
from helpers.jupyter import workbook

STUDENT_DIR = config.ROOT / "student"
ASSIGNMENT = "workbook"  # nbgrader's name for the set of notebooks it converts
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's stub for Python
KEEP_OUTPUTS_TAG = "committed-results"  # a cell that only displays results committed in data/
STUDENT_README = """# The student edition

These are the workbook's notebooks with the answers to their exercises taken out: each exercise
cell says `# YOUR CODE HERE`, and the locked cell after it checks your answer when you run it.
Run a notebook from the top (Kernel > Restart Kernel and Run All Cells); it stops at the first
exercise you have not done yet, after every lesson above it has run.

Start with `00_environment_check.ipynb`; its first cell links the
[glossary](../docs/glossary.md), which defines every term the notebooks use. Cells that only
show results committed in `data/` (the full benchmark, torture run and conflict matrix) keep
their outputs here, so what their text describes is there before you run anything.

Do not edit these files by hand: `make student` writes them from `notebooks/` with nbgrader.
The answers are in `notebooks/` (the same notebooks, answers in place) and in
`notebooks/solutions/` (the discussion questions).
"""


class StudentEditionError(RuntimeError):
    """nbgrader failed, or student/ is not current; the message says what to run."""


@dataclass(frozen=True)
class Exercise:
    notebook: str
    grade_id: str  # nbgrader's id of the answer cell
    answer: str  # the cell's source, answer included
    check_id: str  # the check cell that follows it


def _nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def exercises(path: Path) -> list[Exercise]:
    """The notebook's exercises in order: each answer cell with the check cell after it."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = []
    for i, cell in enumerate(cells):
        meta = _nbgrader(cell)
        if not meta.get("solution"):
            continue
        following = cells[i + 1] if i + 1 < len(cells) else {}
        if not _nbgrader(following).get("grade"):
            raise StudentEditionError(
                f"{path.name}: the answer cell {meta.get('grade_id')!r} is not followed by a check cell (nbgrader grade: true)"
            )
        found.append(
            Exercise(
                path.name,
                meta["grade_id"],
                "".join(cell["source"]),
                _nbgrader(following)["grade_id"],
            )
        )
    return found


def generate(target: Path) -> list[Path]:
    """Write the student edition of every notebook into ``target`` (its notebooks replaced)."""
    sources = workbook.notebooks()
    with tempfile.TemporaryDirectory(prefix="student-edition-") as tmp:
        course = Path(tmp)
        source_dir = course / "source" / ASSIGNMENT
        source_dir.mkdir(parents=True)
        for path in sources:
            exercises(path)  # every answer cell has its check cell
            shutil.copy2(path, source_dir / path.name)
        (course / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.root = {str(course)!r}\n"
            f"c.CourseDirectory.db_url = {'sqlite:///' + str(course / 'gradebook.db')!r}\n",
            encoding="utf-8",
        )
        command = [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            ASSIGNMENT,
            "--force",
            "--log-level=WARN",
        ]
        # nbgrader runs `alembic` (its database migrations) from PATH: this environment's
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        done = subprocess.run(command, cwd=course, env=env, capture_output=True, text=True)
        release = course / "release" / ASSIGNMENT
        if done.returncode != 0 or not release.is_dir():
            raise StudentEditionError(
                f"nbgrader generate_assignment failed (exit {done.returncode}):\n{done.stdout}{done.stderr}".rstrip()
            )
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.ipynb"):
            old.unlink()
        written = []
        for path in sources:
            _keep_committed_outputs(path, release / path.name, target / path.name)
            written.append(target / path.name)
        (target / "README.md").write_text(STUDENT_README, encoding="utf-8")
        written.append(target / "README.md")
    return written


def kept_cells(notebook: dict) -> list[int]:
    """Indexes of the cells tagged :data:`KEEP_OUTPUTS_TAG`."""
    return [
        i
        for i, cell in enumerate(notebook["cells"])
        if KEEP_OUTPUTS_TAG in cell.get("metadata", {}).get("tags", [])
    ]


def _keep_committed_outputs(source: Path, released: Path, target: Path) -> None:
    """Write nbgrader's copy to ``target`` with the outputs of the source's tagged cells put back."""
    original = json.loads(source.read_text(encoding="utf-8"))
    keep = kept_cells(original)
    if not keep:
        shutil.copyfile(released, target)
        return
    student = json.loads(released.read_text(encoding="utf-8"))
    for i in keep:
        cell, copy = original["cells"][i], student["cells"][i]
        if "".join(cell["source"]) != "".join(copy["source"]):
            raise StudentEditionError(
                f"{source.name}: cell {i} is tagged {KEEP_OUTPUTS_TAG!r} but nbgrader changed it; "
                "tag only cells that display committed results, never an exercise"
            )
        copy["outputs"] = [
            {**out, "execution_count": None} if "execution_count" in out else out
            for out in cell.get("outputs", [])
        ]
    target.write_text(
        json.dumps(student, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )  # as nbformat writes it


def stale_files(committed: Path = STUDENT_DIR) -> list[str]:
    """What differs between ``committed`` and a fresh build: missing, extra or changed files."""
    with tempfile.TemporaryDirectory(prefix="student-check-") as tmp:
        fresh = Path(tmp)
        names = {p.name for p in generate(fresh)}
        present = {p.name for p in committed.iterdir()} if committed.is_dir() else set()
        problems = [f"{name}: missing" for name in sorted(names - present)]
        problems += [
            f"{name}: not written by make student (remove it)" for name in sorted(present - names)
        ]
        problems += [
            f"{name}: differs from what make student writes now"
            for name in sorted(names & present)
            if not filecmp.cmp(fresh / name, committed / name, shallow=False)
        ]
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.jupyter.student", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("action", choices=["build", "check"])
    args = parser.parse_args(argv)
    try:
        if args.action == "build":
            written = generate(STUDENT_DIR)
            count = sum(len(exercises(p)) for p in workbook.notebooks())
            print(
                f"student edition: {len(written) - 1} notebooks, {count} exercises, in {config.shown(STUDENT_DIR)}/"
            )
            return 0
        problems = stale_files()
        for problem in problems:
            print(f"student/{problem}", file=sys.stderr)
        if problems:
            print(
                "The student edition is not current: run `make student` and commit student/.",
                file=sys.stderr,
            )
            return 1
        print("student/ is current")
        return 0
    except StudentEditionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
