"""The torture checker's readers (helpers/torture/protocol_verdict.py): a reader that fails is a
problem of its protocol, recorded with the run's tables, never the end of the run."""

from __future__ import annotations


def test_a_checker_reader_that_fails_is_a_problem_of_its_protocol_not_the_end_of_the_run(tmp_path):
    """A table its own library cannot read or vacuum (one left with an item complete without its
    commit file, say) is recorded among the protocol's problems, and the run goes on to save its
    tables: here a deltalake reader asked for a table that is not there."""
    from types import SimpleNamespace

    from helpers.ground import eras
    from helpers.torture.protocol_verdict import Verdict

    verdict = Verdict.__new__(Verdict)  # only the reader's part: no run behind it
    verdict.prun, verdict.readers, verdict.problems = SimpleNamespace(folder=tmp_path), {}, []
    missing = {"table_uri": str(tmp_path / "no-table"), "storage_options": {}}
    verdict._read("vacuum", eras.CURRENT, "deltalake", [{**missing, "vacuum": True}])
    assert verdict.readers == {}
    assert len(verdict.problems) == 1
    assert verdict.problems[0].startswith("The reader vacuum (deltalake-1.6.6, deltalake) failed:")
