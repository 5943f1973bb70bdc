"""The torture run's hold on a repair of a live commit (helpers/torture/repair_hold.py): another
process's copy of a staged file waits while the writer that staged it is still moving it, and
goes at once when that writer's move is over or the writer is dead. The requests are the ones
deltalake 1.5.1's DynamoDB log store sends (notebook 12 runs the hold against it)."""

from __future__ import annotations

import json
import threading

from helpers.delta import delta_log
from helpers.torture.repair_hold import RepairHold, copy_source

LOG = "/delta-root/t/_delta_log/"
STAGED = "_commit_dd7e06cb-73d4-43a2-a791-406e90504ace.json.tmp"
DEADLOCK_S = 60
"""How long a copy that should go is waited for: a detector of a hold that never ends, not a race
(it goes at once)."""


def lock_request(operation: str, version: int, temp_path: str | None = None):
    item = {
        "tablePath": {"S": "s3://delta-root/t"},
        "fileName": {"S": delta_log.commit_file_name(version)},
    }
    if operation == "PutItem":
        body = {
            "TableName": "delta_log",
            "Item": {**item, "tempPath": {"S": temp_path}},
            "ConditionExpression": "attribute_not_exists(fileName)",
        }
    else:
        body = {"TableName": "delta_log", "Key": item, "ConditionExpression": "complete = :f"}
    return (
        "POST",
        "/",
        [("X-Amz-Target", f"DynamoDB_20120810.{operation}")],
        json.dumps(body).encode(),
    )


def copy_part(version: int, staged: str = STAGED):
    path = LOG + delta_log.commit_file_name(version) + "?partNumber=1&uploadId=u"
    return "PUT", path, [("x-amz-copy-source", f"delta-root/t/_delta_log/{staged}")], b""


def send(hold: RepairHold, gate, request, status: int | None = 200) -> None:
    hold.before(gate, *request)
    hold.after(gate, *request, status)


def copy_in_thread(hold: RepairHold, gate, request) -> threading.Event:
    done = threading.Event()

    def copy():
        hold.before(gate, *request)
        done.set()

    threading.Thread(target=copy, daemon=True).start()
    return done


def test_the_copy_source_names_the_staged_file():
    assert copy_source(copy_part(5)[2]) == STAGED
    assert copy_source([("x-amz-copy-source", "delta-root/t/part-0.parquet")]) is None
    assert copy_source([]) is None


def test_a_reader_copy_of_a_live_writer_staged_file_waits_until_the_writer_marked_its_item():
    writer, reader = object(), object()
    hold = RepairHold(alive=lambda gate: True)
    send(hold, writer, lock_request("PutItem", 5, STAGED))  # the claim of version 5, accepted
    done = copy_in_thread(hold, reader, copy_part(5))
    assert not done.wait(timeout=1.0)  # held (whatever the wait, it is not over yet)
    for step in (
        ("POST", LOG + delta_log.commit_file_name(5) + "?uploads=", [], b""),
        copy_part(5),  # the writer's own copy: never held
        (
            "POST",
            LOG + delta_log.commit_file_name(5) + "?uploadId=u",
            [("if-none-match", "*")],
            b"",
        ),
        (
            "POST",
            "/delta-root?delete",
            [],
            f"<Delete><Object><Key>t/_delta_log/{STAGED}</Key></Object></Delete>".encode(),
        ),
    ):
        send(hold, writer, step)
    assert not done.wait(timeout=1.0)  # still moving: the item is not marked yet
    send(hold, writer, lock_request("UpdateItem", 5))
    assert done.wait(timeout=DEADLOCK_S), "the copy was held after the writer marked its item"
    assert hold.held == 1


def test_the_copy_goes_when_the_writer_dies_or_moves_on_or_its_claim_was_refused():
    writer, reader = object(), object()
    alive = {"writer": True}
    hold = RepairHold(alive=lambda gate: alive["writer"])
    send(hold, writer, lock_request("PutItem", 5, STAGED))
    done = copy_in_thread(hold, reader, copy_part(5))
    assert not done.wait(timeout=1.0)
    alive["writer"] = False  # killed after its claim: the reader's repair is the recovery
    assert done.wait(timeout=DEADLOCK_S), "a dead writer's move held the copy"

    alive["writer"] = True
    send(hold, writer, lock_request("PutItem", 6, STAGED))
    done = copy_in_thread(hold, reader, copy_part(6))
    assert not done.wait(timeout=1.0)
    send(
        hold, writer, ("GET", LOG + "_last_checkpoint", [], b"")
    )  # not part of the move: it is over
    assert done.wait(timeout=DEADLOCK_S), "the copy was held after the writer moved on"

    send(hold, writer, lock_request("PutItem", 7, STAGED), status=400)  # another writer has 7
    assert copy_in_thread(hold, reader, copy_part(7)).wait(timeout=DEADLOCK_S)
    assert hold.held == 2
