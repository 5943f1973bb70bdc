"""helpers.jupyter.student: student/ is current, every answer is out of it, and putting the answers back
gives the notebooks `make test` executes (where each exercise's check cell runs and passes)."""

import json

import pytest

from helpers.jupyter import student, workbook


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"])


def _put_answer_back(student_source: str, answer: str) -> str:
    """The student cell with nbgrader's stub replaced by the answer between the markers."""
    begin, end = answer.index(student.BEGIN), answer.index(student.END) + len(student.END)
    solution = answer[begin:end]
    inner = solution[len(student.BEGIN) : -len(student.END)].strip("\n")
    assert student.STUB in student_source, "the student cell has nbgrader's stub"
    return student_source.replace(student.STUB, inner, 1)


def _without_markers(source: str) -> str:
    return "\n".join(
        line for line in source.split("\n") if line.strip() not in (student.BEGIN, student.END)
    )


def test_the_committed_student_edition_is_what_make_student_writes():
    assert student.stale_files() == []


def test_every_lesson_notebook_has_an_exercise_and_each_has_its_check():
    counts = {p.name: len(student.exercises(p)) for p in workbook.notebooks()}
    lessons = {name: n for name, n in counts.items() if not name.startswith("00_")}
    assert all(n >= 1 for n in lessons.values()), lessons
    ids = [e.grade_id for p in workbook.notebooks() for e in student.exercises(p)]
    assert len(ids) == len(set(ids)), "nbgrader ids are unique across the workbook"


@pytest.mark.parametrize("notebook", workbook.notebooks(), ids=lambda p: p.stem)
def test_answers_out_of_the_student_edition_and_back_in_give_the_notebook(notebook):
    taught = _cells(notebook)
    given = _cells(student.STUDENT_DIR / notebook.name)
    assert len(given) == len(taught)
    for mine, theirs in zip(taught, given):
        assert mine["cell_type"] == theirs["cell_type"]
        kept = student.KEEP_OUTPUTS_TAG in mine.get("metadata", {}).get(
            "tags", []
        )  # committed results, shown
        assert theirs.get("outputs", []) == (
            [
                {**o, "execution_count": None} if "execution_count" in o else o
                for o in mine.get("outputs", [])
            ]
            if kept
            else []
        ), "the student edition has no outputs but those of cells that display committed results"
        meta = mine.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            assert student.BEGIN not in _source(theirs) and "### END" not in _source(theirs)
            assert _put_answer_back(_source(theirs), _source(mine)) == _without_markers(
                _source(mine)
            )
        else:
            assert _source(theirs) == _source(mine)
        if meta.get("grade"):
            assert (
                theirs["metadata"]["nbgrader"]["locked"]
                and theirs["metadata"].get("editable") is False
            )


def test_an_answer_cell_without_a_check_cell_is_refused(tmp_path):
    answer = {
        "cell_type": "code",
        "metadata": {"nbgrader": {"solution": True, "grade": False, "grade_id": "lonely"}},
        "source": f"{student.BEGIN}\nx = 1\n{student.END}\n",
        "outputs": [],
        "execution_count": None,
    }
    path = tmp_path / "99_lonely.ipynb"
    path.write_text(
        json.dumps({"cells": [answer], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    with pytest.raises(student.StudentEditionError, match="lonely"):
        student.exercises(path)


def test_the_student_edition_runs_up_to_its_first_exercise(tmp_path):
    """What a learner sees on Run All: every lesson cell runs, then the first exercise stops it.
    (Notebook 04: its lessons start no JVM; its tables get a name of their own, so this run cannot
    meet nbval's run of notebook 04 on the other worker.)"""
    path = student.STUDENT_DIR / "04_s3_needs_a_lock.ipynb"
    first_answer = next(
        i for i, c in enumerate(_cells(path)) if c["metadata"].get("nbgrader", {}).get("solution")
    )
    done = workbook.execute(path, tmp_path / path.name, {"table_name": "student-edition-check"})
    first_answer += (
        1  # papermill puts the given parameters in a cell of their own, after the parameters cell
    )
    assert done.error is not None and done.error.startswith("NotImplementedError"), done.error
    assert done.failed_cell.startswith(f"cell {first_answer} "), done.failed_cell
