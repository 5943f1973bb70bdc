"""The copy cells follow the answer page's advice on a lost commit answer: each deltalake append a
learner copies, run through the lost-answer gate (the store applies the commit, the answer never
comes back), commits its rows once and returns as an append that landed; read from storage."""

from __future__ import annotations

import uuid

import pytest

from helpers.ground import config, eras
from helpers.lost_answer import trials
from helpers.lost_answer.gate import LostAnswerGate
from helpers.stores import tables
from tests.test_copy_safe import DATA, _cell_of, lock_append_only, run_cell

CASES = {
    "08": ("s3", "conditional-put", "append_to_s3({uri!r}, data, 'batch-001.jsonl', 1)", None),
    "03": (
        "azure",
        "conditional-put",
        "append_to_azure({uri!r}, data, 'batch-001.jsonl', 1)",
        None,
    ),
    "13": (
        "s3",
        "conditional-put",
        "append_once({uri!r}, data, 'job', 1, storage_options={options!r})",
        None,
    ),
    "06": (
        "s3",
        "dynamodb-claim",
        "append_with_lock({uri!r}, data, 'delta_log', 'batch-001.jsonl', 1)",
        eras.DYNAMODB_INTEROP,
    ),
}


@pytest.mark.services
@pytest.mark.parametrize("notebook", CASES)
def test_a_copy_cell_commits_once_when_its_commit_answer_is_lost(stores, notebook):
    import pyarrow as pa
    from deltalake import write_deltalake

    backend, fault, call, era = CASES[notebook]
    name = f"copy-cells/lost-{notebook}-{uuid.uuid4().hex[:8]}"
    uri = tables.azure_uri(name) if backend == "azure" else tables.s3_uri(name)
    direct = tables.azure_storage_options() if backend == "azure" else tables.s3_storage_options()
    write_deltalake(
        uri, pa.table({"id": [0]}), storage_options=direct
    )  # version 0, not through the gate
    upstream = config.azurite_endpoint() if backend == "azure" else None
    with LostAnswerGate(fault, upstream) as gate:
        if backend == "azure":
            endpoints = {
                "AZURE_STORAGE_ENDPOINT": gate.route_azure(direct)["azure_storage_endpoint"]
            }
            options = gate.route_azure(direct)
        else:
            endpoints = {
                "AWS_ENDPOINT_URL": gate.endpoint,
                "AWS_ENDPOINT_URL_DYNAMODB": gate.endpoint,
            }
            options = gate.route(direct)
        python = str(eras.python_for(era)) if era else None
        source = _cell_of(notebook)
        told = run_cell(
            lock_append_only(source) if era else source,
            DATA + "print(" + call.format(uri=uri, options=options) + ")",
            **({"python": python} if python else {}),
            endpoints=endpoints,
        )
        dropped = [table for table, _ in gate.dropped]
    assert any(table.endswith(name) for table in dropped), dropped
    assert told == "True"
    assert trials.stored_commits(uri)[:2] == (1, 10)


@pytest.mark.services
def test_a_copy_cell_without_the_check_is_caught(stores):
    """08's cell as it was before the check: the lost answer's error reaches the job (which would
    rerun an append that landed)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    source = _cell_of("08")
    start = source.index("    except Exception:")
    unchecked = (
        source[:start].replace(
            "    try:\n        write_deltalake", "    if True:\n        write_deltalake"
        )
        + "    return True\n"
    )
    assert "except Exception" not in unchecked
    uri = tables.s3_uri(f"copy-cells/lost-unchecked-{uuid.uuid4().hex[:8]}")
    write_deltalake(uri, pa.table({"id": [0]}), storage_options=tables.s3_storage_options())
    with LostAnswerGate("conditional-put") as gate:
        with pytest.raises(AssertionError, match="CommitFailedError"):
            run_cell(
                unchecked,
                DATA + f"print(append_to_s3({uri!r}, data, 'batch-001.jsonl', 1))",
                endpoints={"AWS_ENDPOINT_URL": gate.endpoint},
            )
    assert trials.stored_commits(uri)[:2] == (1, 10)  # it landed all the same
