"""The torture run's pure parts: each writer's operations, how a request maps to a step of a
commit (where the kill gate strikes), and how the checker classifies operations and rows. The
run itself (writers, kills, restarts) is notebook 12 (the delta-rs protocols' bounded subset, in
`make test`), `make torture-spark` (Spark's, in CI) and `make torture` (the full run)."""

from __future__ import annotations

import ast
import json
import re

import papermill
import pytest

from helpers.delta import delta_log, integrity
from helpers.ground import config
from helpers.torture import check, faults, plan, protocol_run, protocol_verdict
from helpers.torture.check import LoggedOperation

LOG = "/bucket/t/_delta_log/"


def test_operations_are_numbered_by_writer_and_mix_deletes_and_compactions():
    ops = plan.operations(writers=4, per_writer=10)
    assert [o["op"] for o in ops["w2"]] == list(range(11, 21))
    kinds = [o["kind"] for o in ops["w1"]]
    assert kinds.count("delete") == 1 and kinds[-1] == "compact" and kinds.count("append") == 8
    assert [o["kind"] for o in ops["w2"]].count("compact") == 0  # only the compactors compact
    eight = plan.operations(
        writers=8, per_writer=10, compactors=plan.PROTOCOLS["s3-dynamodb-lock"].compactors
    )
    assert [w for w, o in eight.items() if o[-1]["kind"] == "compact"] == ["w1", "w5"]
    with pytest.raises(plan.PlanError, match="whole number"):
        plan.operations(writers=2, per_writer=0)


def test_deltalake_1_6_protocols_compact_from_one_writer_and_the_others_race_their_compactions():
    one = {name for name, proto in plan.PROTOCOLS.items() if proto.compactors == (1,)}
    assert one == {"s3-conditional-put", "azure", "mixed-spark-and-deltalake-1.6"}
    assert plan.PROTOCOLS["spark-dynamodb"].compactors == (1, 5)


def test_kills_take_each_point_in_turn_and_only_where_there_are_points():
    assert plan.kill_schedule(plan.PROTOCOLS["s3-conditional-put"], 3) == [
        "data-written",
        "claimed",
        "data-written",
    ]
    with pytest.raises(plan.PlanError, match="no kill points"):
        plan.kill_schedule(plan.PROTOCOLS["s3-unsafe-rename"], 1)
    with pytest.raises(plan.PlanError, match="Unknown protocol 'azur'"):
        plan.protocol("azur")


@pytest.mark.parametrize(
    "method, path, headers, body, style, step",
    [
        ("PUT", "/bucket/t/part-0001.parquet", [], b"x", "object", "data"),
        (
            "PUT",
            LOG + delta_log.commit_file_name(7),
            [("If-None-Match", "*")],
            b"{}",
            "object",
            "claim",
        ),
        (
            "PUT",
            LOG + delta_log.commit_file_name(7),
            [],
            b"{}",
            "object",
            None,
        ),  # a plain copy under the lock: not a claim
        (
            "PUT",
            LOG + "_commit_0b6f5c1e-6f0e-4a43-9d0a-5d3c1e2a9b7f.json.tmp",
            [],
            b"{}",
            "dynamodb",
            "staged",
        ),
        (
            "PUT",
            LOG + ".tmp/" + delta_log.commit_file_name(7) + ".0b6f5c1e",
            [],
            b"{}",
            "dynamodb",
            "staged",
        ),
        ("GET", LOG + delta_log.commit_file_name(7), [], None, "object", None),
    ],
)
def test_each_request_is_one_step_of_a_commit(method, path, headers, body, style, step):
    assert faults.step_of(method, path, headers, body, style) == step


def test_dynamodb_claims_and_marks_are_told_apart():
    item = {
        "tablePath": {"S": "s3://bucket/t"},
        "fileName": {"S": delta_log.commit_file_name(3)},
        "tempPath": {"S": "x.tmp"},
    }
    claim = json.dumps(
        {
            "TableName": "delta_log",
            "Item": item,
            "ConditionExpression": "attribute_not_exists(fileName)",
        }
    ).encode()
    mark = json.dumps(
        {"TableName": "delta_log", "Key": {k: item[k] for k in ("tablePath", "fileName")}}
    ).encode()
    target = [("X-Amz-Target", "DynamoDB_20120810.PutItem")]
    assert faults.step_of("POST", "/", target, claim, "dynamodb") == "claim"
    assert (
        faults.step_of(
            "POST", "/", [("X-Amz-Target", "DynamoDB_20120810.UpdateItem")], mark, "dynamodb"
        )
        == "mark"
    )


def test_the_copied_kill_point_is_the_mark_of_the_process_own_item_only():
    """A writer also marks items it finishes for a killed writer; ``copied`` means its own commit."""
    gate = faults.KillGate("http://127.0.0.1:9", claim_style="dynamodb")
    try:

        def mark(version: int) -> bytes:
            key = {
                "tablePath": {"S": "s3://bucket/t"},
                "fileName": {"S": delta_log.commit_file_name(version)},
            }
            return json.dumps({"TableName": "delta_log", "Key": key}).encode()

        target = [("X-Amz-Target", "DynamoDB_20120810.UpdateItem")]
        assert not gate._marks_own_item(target, mark(3))  # no claim of its own yet
        gate._own_claim = 3
        assert gate._marks_own_item(target, mark(3)) and not gate._marks_own_item(target, mark(2))
    finally:
        gate.close()


def test_operations_are_classified_by_what_the_log_holds():
    assert [check.classify(True, n) for n in (1, 0, 2)] == [
        check.KEPT,
        check.LOST,
        check.DUPLICATED,
    ]
    assert [check.classify(False, n) for n in (0, 1, 2)] == [
        check.ABSENT,
        check.LANDED,
        check.DUPLICATED,
    ]
    logged = [
        LoggedOperation(1, "w1", 1, "append", None),
        LoggedOperation(2, "w1", 2, "append", None),
        LoggedOperation(3, "w1", 3, "delete", 1),
        LoggedOperation(4, "w2", 9, "compact", None),
    ]
    rows = check.account(
        [
            {"writer": "w1", "op": 2, "outcome": check.ACKNOWLEDGED},
            {"writer": "w1", "op": 4, "outcome": check.ACKNOWLEDGED},
            {"writer": "w2", "op": 9, "outcome": "killed"},
        ],
        logged,
    )
    assert [(r["op"], r["verdict"]) for r in rows] == [
        (2, check.KEPT),
        (4, check.LOST),
        (9, check.LANDED),
    ]
    assert check.expected_batches(logged) == {2}


def test_rows_are_compared_batch_by_batch():
    assert check.rows_match({2: 10}, {2}) == []
    problems = check.rows_match({"2": 9, "5": 10}, {2, 3})
    assert problems == [
        "1 batch(es) missing (e.g. [3])",
        "1 batch(es) that should not be there (e.g. [5])",
        "1 batch(es) without exactly 10 rows (e.g. {2: 9})",
    ]


def _torture_spark_target() -> dict[str, object]:
    """The arguments of `make torture-spark` (the Spark protocol's bounded run, in CI)."""
    (line,) = re.findall(
        r"^\t\$\(PY\) -m helpers\.torture --name spark-subset (.*)$",
        (config.ROOT / "Makefile").read_text(),
        re.M,
    )
    args = dict(re.findall(r"--([\w-]+) ((?:[^-\s][^\s]*\s?)+)", line))
    return {
        "protocols": args["protocols"].split(),
        "spark_per_writer": int(args["per-writer"]),
        "kills": int(args["kills"]),
        "min_commits": int(args["min-commits"]),
    }


def test_notebook_12_and_make_torture_spark_run_the_bounded_subset_ci_promises():
    """Every safe protocol, at least 60 commits each (the notebook and the command check them), every
    kill point hit, a service restarted: the delta-rs protocols in notebook 12 (make test), Spark's
    in `make torture-spark` (.ci/run), with the notebook's Spark settings. Spark's appends never
    conflict, so its appends less the operations its kills interrupt are commits; up to half of
    delta-rs's operations fail (docs/torture.md), so it gets twice as many operations."""
    declared = papermill.inspect_notebook(str(config.ROOT / "notebooks" / "12_torture.ipynb"))
    defaults = {name: ast.literal_eval(p["default"]) for name, p in declared.items()}
    spark_run = _torture_spark_target()
    assert (spark_run["spark_per_writer"], spark_run["kills"], spark_run["min_commits"]) == (
        defaults["spark_per_writer"],
        defaults["kills"],
        defaults["min_commits"],
    )
    assert "make torture-spark" in (config.ROOT / ".ci" / "run").read_text()
    safe = [p for p in plan.PROTOCOLS.values() if p.safe]
    assert {p.name for p in safe if not p.spark} <= set(defaults["protocols"])
    assert {p.name for p in safe if p.spark} <= set(spark_run["protocols"])
    assert defaults["min_commits"] >= 50  # docs/torture.md: the bounded subset's promise
    for proto in safe:
        ops = plan.operations(
            proto.writers,
            defaults["spark_per_writer" if proto.spark else "per_writer"],
            proto.compactors,
        )
        appends = sum(o["kind"] == "append" for writer in ops.values() for o in writer)
        if proto.spark:  # a kill takes a whole driver: every writer thread's operation in flight
            in_flight = defaults["kills"] * max(g.threads for g in proto.groups)
            assert appends - in_flight >= defaults["min_commits"], proto.name
        else:
            assert sum(map(len, ops.values())) >= 2 * defaults["min_commits"], proto.name
    assert defaults["kills"] >= max(len(p.kill_points) for p in safe)
    assert defaults["restarts"] >= 1


def test_a_service_is_stopped_only_when_no_writer_is_still_opening_its_table():
    """deltalake 1.5.1 opening a table while DynamoDB is down says only "error in DynamoDb": the
    harness never stops a service under a process that has not journaled ``go`` yet."""
    events = [
        {"event": "go", "process": "p1.1"},
        {"event": "ack", "writer": "w1", "op": 1},
        {"event": "go", "process": "p2.2"},
    ]
    assert protocol_run.still_setting_up(events, ["p1.1", "p2.2"]) == []
    assert protocol_run.still_setting_up(events, ["p1.1", "p3.2"]) == ["p3.2"]


def test_an_error_naming_no_endpoint_is_traced_to_the_emulator_behind_the_gate():
    """deltalake 1.5.1 says only "error in DynamoDb": the writer asks its own endpoints."""
    import http.server
    import threading

    from helpers.ground import local_processes
    from helpers.torture import worker

    stopped = local_processes.free_port()

    class Gate(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"commit gate: the emulator at 127.0.0.1:{stopped} did not answer".encode()
            self.send_response(502)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Gate)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        gate = [("127.0.0.1", server.server_port)]
        assert worker.unanswered_behind(gate) == ("127.0.0.1", stopped)
        nothing = local_processes.free_port()
        assert worker.unanswered_behind([("127.0.0.1", nothing)]) == ("127.0.0.1", nothing)
        # how the journal says it was found: in the message, by asking, or not at all
        named = f"Generic S3 error: error sending request for url (http://127.0.0.1:{nothing}/bucket/t/_delta_log/)"
        assert worker.service_down(named, gate) == (("127.0.0.1", nothing), worker.FOUND_IN_ERROR)
        assert worker.service_down("Generic error: error in DynamoDb", gate) == (
            ("127.0.0.1", stopped),
            worker.FOUND_BY_PROBE,
        )
        assert worker.service_down("Transaction failed: version already exists", gate) == (
            None,
            None,
        )
    finally:
        server.shutdown()
        server.server_close()


def test_integrity_problems_are_reported_one_line_per_kind(tmp_path):
    """Hundreds of files removed twice by an unsafe protocol make one line, with a count and examples."""
    problems = [
        integrity.Problem("removed twice", f"f{i}.parquet", 28, "version 27 already removed it")
        for i in range(5)
    ]
    problems.append(integrity.Problem("stray file", "_delta_log/x", None, "not a log file"))
    found = integrity.Check("s3://b/t", [0], [], -1, {}, [], problems=problems)
    assert protocol_verdict.integrity_findings("table", found) == [
        "table: 5 x removed twice (e.g. removed twice: f0.parquet (version 28): version 27 already removed it; "
        "removed twice: f1.parquet (version 28): version 27 already removed it)",
        "table: 1 x stray file (e.g. stray file: _delta_log/x: not a log file)",
    ]


def test_a_service_is_never_stopped_between_a_commit_copy_and_its_cleanup():
    """deltalake's DynamoDB log store copies a staged commit to N.json, then deletes the staged
    file; a restart waits until no gate is between the two, and holds new copies back meanwhile."""
    import threading

    from helpers.torture import faults

    log = "/delta-root/t/_delta_log/"
    assert faults.copy_completion("POST", log + "00000000000000000086.json?uploadId=abc", [])
    assert faults.copy_completion(
        "PUT",
        log + "00000000000000000086.json",
        [("x-amz-copy-source", "delta-root/t/_delta_log/_commit_x.json.tmp")],
    )
    assert not faults.copy_completion(
        "PUT",
        log + "00000000000000000086.json?partNumber=1&uploadId=abc",
        [("x-amz-copy-source", "x")],
    )
    assert not faults.copy_completion(
        "PUT", log + "00000000000000000086.json", [("if-none-match", "*")]
    )  # a conditional put is the commit itself
    assert not faults.copy_completion("POST", "/delta-root/t/part-0.parquet?uploadId=abc", [])
    assert faults.staged_cleanup(
        "DELETE", log + "_commit_dd7e06cb-73d4-43a2-a791-406e90504ace.json.tmp"
    )
    assert not faults.staged_cleanup("DELETE", log + "00000000000000000086.json")
    bulk = b"<Delete><Object><Key>t/_delta_log/_commit_dd7e06cb-73d4-43a2-a791-406e90504ace.json.tmp</Key></Object></Delete>"
    assert faults.staged_cleanup(
        "POST", "/delta-root?delete", bulk
    )  # deltalake 1.5.1 deletes it this way
    assert not faults.staged_cleanup(
        "POST",
        "/delta-root?delete",
        b"<Delete><Object><Key>t/part-0.parquet</Key></Object></Delete>",
    )

    windows, copying, other = faults.StopWindows(), object(), object()
    windows.enter(copying, windows.COPY)
    stopped = threading.Event()

    def restart():
        with windows.closed(lambda gate: True):
            stopped.set()

    restarting = threading.Thread(target=restart)
    restarting.start()
    assert not stopped.wait(
        timeout=1.0
    )  # a copy is open: the stop waits (whatever the wait, it is not over yet)
    windows.leave(copying, windows.COPY)
    restarting.join()
    assert stopped.is_set()
    windows.enter(other, windows.COPY)
    passed = threading.Event()

    def restart_past_a_dead_writer():
        with windows.closed(lambda gate: False):  # the open window's process is gone
            passed.set()

    threading.Thread(target=restart_past_a_dead_writer, daemon=True).start()
    # a deadlock detector, not a race: it passes at once, and 60 s is only how long a broken one is waited for
    assert passed.wait(timeout=60), "an open window whose process is gone held the stop"


def _claims_store(before_answer=lambda: None):
    """A real HTTP store on a free loopback port that takes every PUT (a claim) with 201, after
    ``before_answer()``; serving until ``shutdown()``."""
    import http.server
    import threading

    class Store(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_PUT(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            before_answer()
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

    store = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Store)
    store.daemon_threads = True
    threading.Thread(target=store.serve_forever, daemon=True).start()
    return store


def _claim(gate: faults.KillGate, version: int) -> int:
    """Claim ``version`` through ``gate`` as a conditional PUT of its commit file: the status."""
    import urllib.request

    request = urllib.request.Request(
        f"{gate.endpoint}/c/t/_delta_log/{version:020d}.json",
        data=b"{}",
        method="PUT",
        headers={"If-None-Match": "*"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status


def test_a_service_is_never_stopped_while_a_claim_awaits_its_answer():
    """A store that applies a claim and stops before answering makes deltalake commit the same
    operation twice (findings/deltalake-lost-commit-response-commits-twice): a real gate forwards
    a claim to a store that holds its answer, and a restart waits until the answer has passed;
    a claim sent while a stop is being made waits until the stop is over. A Spark driver's
    threads share one gate: two claims open, one answered, the stop still waits."""
    import threading

    answer_claims = threading.Event()
    claims_seen = threading.Semaphore(0)

    def hold_the_answer():
        claims_seen.release()
        answer_claims.wait()

    store = _claims_store(hold_the_answer)
    windows = faults.StopWindows()
    gate = faults.KillGate(
        f"http://127.0.0.1:{store.server_address[1]}", claim_style="object", windows=windows
    )
    answered = []

    def claim(version):
        answered.append((version, _claim(gate, version)))

    try:
        claimers = [threading.Thread(target=claim, args=(v,), daemon=True) for v in (7, 8)]
        for thread in claimers:
            thread.start()
        for _ in claimers:  # both claims reached the store, which holds their answers
            assert claims_seen.acquire(timeout=60), "the gate did not forward the claim"
        stopped, restarted = threading.Event(), threading.Event()

        def restart():
            with windows.closed(lambda g: True):
                stopped.set()
                restarted.wait(timeout=120)

        restarting = threading.Thread(target=restart, daemon=True)
        restarting.start()
        assert not stopped.wait(timeout=1.0)  # two claims await their answers: the stop waits
        answer_claims.set()
        for thread in claimers:
            thread.join(timeout=60)
        assert sorted(answered) == [(7, 201), (8, 201)]
        assert stopped.wait(timeout=60), "the stop still waited after both answers had passed"
        late = threading.Thread(target=claim, args=(9,), daemon=True)
        late.start()
        assert not claims_seen.acquire(timeout=1.0), (
            "a claim reached the store while it was being stopped"
        )
        restarted.set()
        assert claims_seen.acquire(timeout=60), "the held claim was not sent once the stop was over"
        late.join(timeout=60)
        assert (9, 201) in answered
    finally:
        answer_claims.set()
        gate.close()
        store.shutdown()


def test_orphans_are_the_data_files_no_commit_ever_added(tmp_path):
    """Files a compaction removed were added by a commit: not orphans. A loser's file is."""
    import shutil

    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    table = tmp_path / "t"
    for n in range(3):
        write_deltalake(
            str(table),
            pa.table({"id": pa.array(range(10 * n, 10 * n + 10), pa.int64())}),
            mode="append",
        )
    DeltaTable(
        str(table)
    ).optimize.compact()  # removes the three files it rewrote; they stay on disk until VACUUM
    assert check.orphans(str(table), integrity.check_table(str(table))) == []
    first = sorted(p.name for p in table.glob("*.parquet"))[0]
    shutil.copy(
        table / first, table / "part-00000-lost-writer.parquet"
    )  # data a writer wrote before its commit failed
    assert check.orphans(str(table), integrity.check_table(str(table))) == [
        "part-00000-lost-writer.parquet"
    ]


@pytest.mark.services
def test_incomplete_lock_items_are_those_not_marked_complete(stores, table_name):
    """A DynamoDB log store's item is written incomplete, then marked ``complete=true`` once its
    commit file is copied; a writer that died in between leaves it incomplete. An item complete
    for a version the log does not hold is the other way a table is stuck."""
    from helpers.stores import storage, tables

    uri, lock_table = tables.s3_uri(table_name), config.names().dynamodb_lock_table
    client = storage.dynamodb_client()
    items = {
        1: "true",
        2: "false",
        3: None,
    }  # 3: written by a claim that has not been completed (no attribute yet)
    for version, complete in items.items():
        item = {
            "tablePath": {"S": uri},
            "fileName": {"S": delta_log.commit_file_name(version)},
            "tempPath": {"S": f"_commit_{version}.json.tmp"},
        }
        if complete is not None:
            item["complete"] = {"S": complete}
        client.put_item(TableName=lock_table, Item=item)
    try:
        found = check.lock_items([uri])
        assert check.incomplete_lock_items(found) == [
            delta_log.commit_file_name(2),
            delta_log.commit_file_name(3),
        ]
        assert check.complete_items_without_commit(found, commit_versions=[0, 2, 3]) == [
            delta_log.commit_file_name(1)
        ]  # 1 is complete, and the log has no 1.json
        assert check.complete_items_without_commit(found, commit_versions=[0, 1]) == []
        assert check.lock_items([uri + "-other"]) == []
    finally:
        storage.delete_lock_entries(uri)


def test_a_restart_of_the_aws_store_stops_both_servers_when_versitygw_plays_s3(monkeypatch):
    """With versitygw playing S3, a protocol's "moto" restart is the whole AWS store: both go down
    and come back together; otherwise only the named service."""
    monkeypatch.setenv("WORKBOOK_S3_SERVER", "versitygw")
    assert protocol_run.restarted_together("moto") == ["moto", "versitygw"]
    assert protocol_run.restarted_together("azurite") == ["azurite"]
    monkeypatch.setenv("WORKBOOK_S3_SERVER", "moto")
    assert protocol_run.restarted_together("moto") == ["moto"]


def test_a_due_kill_is_offered_to_the_running_writers_and_made_once(tmp_path):
    """Offered to one writer, a kill at ``claimed`` was lost whenever that writer's remaining
    operations all lost their races (a lost race claims nothing; notebook 12 once ended "3 of 4
    planned kills made"). The run offers each due kill to the running writers' gates at once:
    real gates in front of a store, real processes behind them. The first writer whose claim the
    store accepts is killed and the others commit on unharmed; the next kill waits until that
    death is seen, leaves the victim's slot out, and reaches it once the others have ended."""
    import subprocess
    import urllib.error

    store = _claims_store()
    prun = protocol_run.ProtocolRun(
        plan.PROTOCOLS["azure"], run_id="offer", per_writer=13, kills=2, restarts=0, folder=tmp_path
    )
    prun.slots = prun.slots[:3]
    started = []

    def start(slot) -> protocol_run._Incarnation:
        """A writer's process (one that only sleeps) behind a real kill gate."""
        gate = faults.KillGate(f"http://127.0.0.1:{store.server_address[1]}", claim_style="object")
        inc = protocol_run._Incarnation(
            name=f"p{slot.index}.{len(slot.incarnations) + 1}",
            era=plan.CURRENT,
            module="",
            spec_path=tmp_path / "spec",
            stdout_path=tmp_path / "out",
            stderr_path=tmp_path / "err",
            result_path=tmp_path / "result",
            journal_path=tmp_path / "journal",
            gate=gate,
            process=subprocess.Popen(["sleep", "600"], start_new_session=True),
        )
        gate.pgid = inc.process.pid
        slot.incarnations.append(inc)
        started.append(inc)
        return inc

    def claim(inc, version: int) -> int | None:
        try:
            return _claim(inc.gate, version)
        except (urllib.error.URLError, ConnectionError):
            return None  # the gate killed its process: the writer never hears

    try:
        writers = [start(slot) for slot in prun.slots]
        prun._offer_kill(done=0, total=1000)
        assert prun.kill_offered is None, "a kill was offered before it was due"
        prun._offer_kill(done=1000, total=1000)
        offered = prun.kill_offered
        assert offered is not None and offered.point == "data-written"
        assert [inc.gate.point for inc in writers] == ["data-written"] * 3
        offered.point = "claimed"  # the test's store takes claims only
        victim, others = writers[1], [writers[0], writers[2]]  # not the first slot
        assert claim(victim, 7) is None
        assert victim.process.wait(timeout=60) == -9  # SIGKILLed, its process group with it
        assert victim.gate.killed["point"] == "claimed"
        assert [inc.gate.point for inc in writers] == [
            None,
            "claimed",
            None,
        ]  # spent for the others
        assert [claim(inc, version) for inc, version in zip(others, (8, 9))] == [201, 201]
        assert [(inc.gate.killed, inc.process.poll()) for inc in others] == [(None, None)] * 2
        prun._offer_kill(done=1000, total=1000)
        assert prun.kill_offered is offered, "the next kill was offered before the death was seen"

        prun.kills_made.append({**victim.gate.killed, "process": victim.name, "slot": 2})
        prun.kill_offered = None  # as the run does once it sees the victim's death
        successor = start(prun.slots[1])
        prun._offer_kill(done=1000, total=1000)
        assert [inc.gate.point for inc in (*others, successor)] == ["claimed", "claimed", None]
        for inc in others:  # they end their work without reaching the point
            inc.process.kill()
            inc.process.wait(timeout=60)
        prun._offer_kill(done=1000, total=1000)
        assert successor.gate.point == "claimed", (
            "the kill was lost with the writers it was offered to"
        )
        assert claim(successor, 10) is None and successor.process.wait(timeout=60) == -9
    finally:
        for inc in started:
            if inc.process.poll() is None:
                inc.process.kill()
            inc.process.wait(timeout=60)
            inc.gate.close()
        store.shutdown()
