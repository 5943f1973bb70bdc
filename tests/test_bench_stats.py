"""The benchmark's arithmetic, the meter's attribution and the cloud model, on crafted inputs."""

from __future__ import annotations

import json
import math

import pytest

from helpers.bench import meter, model, stats
from helpers.writers.protocol import BATCH_TAG, WRITER_TAG


def record(writer="w1", batch=1, outcome="committed", start=10.0, done=10.5, attempts=1):
    return {
        "writer": writer,
        "batch": batch,
        "outcome": outcome,
        "t_first_try": start,
        "t_done": done,
        "attempts": attempts,
    }


# -- percentiles ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, q, expected",
    [
        ([1, 2, 3, 4], 50, 2.5),
        ([4, 1, 3, 2], 0, 1.0),
        ([4, 1, 3, 2], 100, 4.0),
        ([5], 99, 5.0),
        (list(range(1, 101)), 95, 95.05),
        ([10, 20], 25, 12.5),
    ],
)
def test_percentile_interpolates_between_closest_ranks(values, q, expected):
    assert stats.percentile(values, q) == pytest.approx(expected)


def test_percentile_matches_numpy_default():
    import numpy

    values = [0.31, 0.02, 1.7, 0.5, 0.09, 0.88, 2.4, 0.12, 0.05]
    for q in (50, 95, 99):
        assert stats.percentile(values, q) == pytest.approx(float(numpy.percentile(values, q)))


@pytest.mark.parametrize("values, q", [([], 50), ([1], -1), ([1], 101)])
def test_percentile_refuses_what_has_no_answer(values, q):
    with pytest.raises(ValueError):
        stats.percentile(values, q)


# -- losses ----------------------------------------------------------------------------------------


def test_count_losses_finds_lost_duplicated_and_unacknowledged_commits():
    commits = [
        record("w1", 1),
        record("w1", 2),
        record("w2", 3),
        record("w2", 4, outcome="failed"),
        record("w3", 5, outcome="failed"),
    ]
    log = {("w1", 1): [1], ("w1", 2): [2, 3], ("w2", 4): [4]}
    losses = stats.count_losses(commits, log)
    assert (
        losses.acknowledged,
        losses.found,
        losses.lost,
        losses.duplicated,
        losses.unacknowledged_in_log,
    ) == (3, 2, 1, 1, 1)
    assert losses.lost_keys == (("w2", 3),)


def test_a_safe_protocol_that_lost_a_commit_fails_the_run_and_an_unsafe_one_does_not():
    losses = stats.count_losses([record("w1", 1), record("w2", 2)], {("w1", 1): [1]})
    with pytest.raises(
        stats.BenchError, match=r"storage holds 1 of 2 acknowledged commits \(1 lost"
    ):
        stats.check_safe("s3-conditional-put", losses, safe=True)
    stats.check_safe("unsafe-rename", losses, safe=False)
    stats.check_safe(
        "s3-conditional-put", stats.count_losses([record()], {("w1", 1): [1]}), safe=True
    )


def test_a_commit_or_a_planned_append_without_a_record_fails_any_run():
    """What the writers never reported cannot be counted: a tagged commit in the log with no record
    (a writer that committed and died before writing its result), a planned append with no record
    (a writer that stopped early). Either fails the run, safe protocol or not."""
    records = [record("w1", 1), record("w2", 2)]
    unrecorded_commit = stats.count_losses(
        records, {("w1", 1): [1], ("w2", 2): [2], ("w3", 3): [3]}
    )
    assert unrecorded_commit.in_log_without_record == (("w3", 3),) and unrecorded_commit.lost == 0
    stopped_early = stats.count_losses(
        records, {("w1", 1): [1], ("w2", 2): [2]}, planned=[("w1", 1), ("w2", 2), ("w2", 3)]
    )
    assert stopped_early.planned_without_record == (("w2", 3),)
    for losses in (unrecorded_commit, stopped_early):
        for safe in (True, False):
            with pytest.raises(stats.BenchError, match="records do not cover the run"):
                stats.check_safe("azure", losses, safe=safe)
    stats.check_safe(
        "azure",
        stats.count_losses(
            records, {("w1", 1): [1], ("w2", 2): [2]}, planned=[("w1", 1), ("w2", 2)]
        ),
        safe=True,
    )


# -- a run's figures -------------------------------------------------------------------------------


def test_run_figures_count_only_commits_the_log_holds_and_leave_setup_out():
    commits = [
        record("w1", 1, start=100.0, done=100.2, attempts=1),
        record("w1", 2, start=100.2, done=100.6, attempts=3),
        record("w2", 3, start=100.0, done=101.0, attempts=2),
        record("w2", 4, outcome="failed", start=101.0, done=102.0, attempts=None),
    ]
    losses = stats.count_losses(commits, {("w1", 1): [1], ("w1", 2): [3], ("w2", 3): [2]})
    figures = stats.run_figures(commits, losses, t_go=100.0, setup_s=[3.0, 5.0])
    assert (figures.commits, figures.committed, figures.failed, figures.lost) == (4, 3, 1, 0)
    assert figures.window_s == pytest.approx(
        2.0
    )  # from go to the last record's end, setup excluded
    assert figures.commits_per_s == pytest.approx(1.5)  # 3 found / 2 s
    assert figures.latency_p50_s == pytest.approx(
        0.4
    )  # of 0.2, 0.4, 1.0 (the failure is not a latency)
    assert figures.latency_mean_s == pytest.approx(1.6 / 3)
    assert figures.attempts_mean == pytest.approx(2.0) and figures.attempts_max == 3
    assert figures.setup_s_mean == pytest.approx(4.0)


def test_a_lost_commit_is_not_counted_as_throughput():
    commits = [record("w1", 1, done=11.0), record("w2", 2, done=11.0)]
    losses = stats.count_losses(commits, {("w1", 1): [1]})
    assert stats.run_figures(commits, losses, t_go=10.0, setup_s=[]).commits_per_s == pytest.approx(
        1.0
    )


def test_run_figures_refuse_an_empty_run_and_a_window_that_ends_before_go():
    with pytest.raises(stats.BenchError, match="without commit records"):
        stats.run_figures([], stats.count_losses([], {}), t_go=0.0, setup_s=[])
    commits = [record(done=9.0)]
    with pytest.raises(stats.BenchError, match="before the barrier opened"):
        stats.run_figures(
            commits, stats.count_losses(commits, {("w1", 1): [1]}), t_go=10.0, setup_s=[]
        )


def test_ratios_to_serial_divide_by_the_same_protocols_one_writer_run():
    rows = [
        {"protocol": "a", "writers": 1, "commits_per_s": 10.0},
        {"protocol": "a", "writers": 8, "commits_per_s": 6.0},
        {"protocol": "b", "writers": 1, "commits_per_s": 4.0},
        {"protocol": "b", "writers": 4, "commits_per_s": 8.0},
    ]
    assert stats.ratios_to_serial(rows) == pytest.approx([1.0, 0.6, 1.0, 2.0])
    with pytest.raises(stats.BenchError, match="c has no run with 1 writer"):
        stats.ratios_to_serial(rows + [{"protocol": "c", "writers": 2, "commits_per_s": 1.0}])
    with pytest.raises(stats.BenchError, match="serial limit is 0"):
        stats.ratios_to_serial([{"protocol": "a", "writers": 1, "commits_per_s": 0.0}])


# -- the meter's attribution -----------------------------------------------------------------------


def body(writer, batch, *, spark=False):
    info = {"operation": "WRITE"}
    if spark:
        info["userMetadata"] = json.dumps({WRITER_TAG: writer, BATCH_TAG: str(batch)})
    else:
        info.update({WRITER_TAG: writer, BATCH_TAG: str(batch)})
    return (
        json.dumps({"commitInfo": info}) + "\n" + json.dumps({"add": {"path": "x.parquet"}}) + "\n"
    ).encode()


class CannedMeter(meter.RequestMeter):
    """The meter's bookkeeping with the emulator replaced by canned answers (no network)."""

    def __init__(self, claim_style, answers):
        super().__init__("http://127.0.0.1:9", claim_style=claim_style)
        self.answers = list(answers)

    def _upstream(self, method, path, headers, body):
        return self.answers.pop(0), "", [], b""


@pytest.fixture
def canned(monkeypatch):
    made = []

    def make(claim_style, answers):
        m = CannedMeter(claim_style, answers)
        monkeypatch.setattr(meter.CommitGate, "forward", lambda self, *a: self._upstream(*a))
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def test_object_claims_are_counted_per_commit_from_the_body_they_carry(canned):
    m = canned("object", [200, 412, 200, 200])
    cond = [("If-None-Match", "*")]
    m.forward("PUT", "/bucket/t/_delta_log/00000000000000000001.json", cond, body("w1", 1))
    m.forward("PUT", "/bucket/t/_delta_log/00000000000000000001.json", cond, body("w2", 5))
    m.forward("PUT", "/bucket/t/_delta_log/00000000000000000002.json", cond, body("w2", 5))
    m.forward("PUT", "/bucket/t/part-0001.parquet", [], b"PAR1")
    assert m.attempts() == {("w1", 1): 1, ("w2", 5): 2}
    assert [c.accepted for c in m.claims] == [True, False, True]
    assert m.count_by_kind() == {
        "data write": 1,
        "log read": 0,
        "claim accepted": 2,
        "claim refused": 1,
        "commit finish": 0,
        "other": 0,
    }


def test_a_conditional_copy_is_attributed_through_the_staged_file_it_copies(canned):
    m = canned("object", [201, 409, 202])
    m.forward("PUT", "/acct/c/t/_delta_log/_commit_abc.json.tmp", [], body("w3", 7))
    m.forward(
        "PUT",
        "/acct/c/t/_delta_log/00000000000000000004.json",
        [
            ("x-ms-copy-source", "http://127.0.0.1:1/acct/c/t/_delta_log/_commit_abc.json.tmp"),
            ("If-None-Match", "*"),
        ],
        None,
    )
    m.forward(
        "PUT",
        "/acct/c/t/_delta_log/00000000000000000005.json",
        [
            ("x-ms-copy-source", "http://127.0.0.1:1/acct/c/t/_delta_log/_commit_abc.json.tmp"),
            ("If-None-Match", "*"),
        ],
        None,
    )
    assert m.attempts() == {("w3", 7): 2}
    assert [(c.version, c.accepted) for c in m.claims] == [(4, False), (5, True)]


def test_dynamodb_claims_are_attributed_through_their_temp_path_and_spark_tags(canned):
    m = canned("dynamodb", [200, 200, 200, 400, 200])
    m.forward(
        "PUT",
        "/bucket/t/_delta_log/.tmp/00000000000000000003.json.u1",
        [],
        body("w2", 9, spark=True),
    )
    m.forward(
        "PUT",
        "/bucket/t/_delta_log/.tmp/00000000000000000003.json.u2",
        [],
        body("w1", 2, spark=True),
    )

    def put_item(version, temp):
        item = {
            "tablePath": {"S": "s3a://bucket/t"},
            "fileName": {"S": f"{version:020d}.json"},
            "tempPath": {"S": temp},
        }
        return json.dumps(
            {
                "TableName": "delta_log",
                "Item": item,
                "ConditionExpression": "attribute_not_exists(fileName)",
            }
        ).encode()

    target = [("X-Amz-Target", "DynamoDB_20120810.PutItem")]
    m.forward("POST", "/", target, put_item(3, ".tmp/00000000000000000003.json.u2"))
    m.forward("POST", "/", target, put_item(3, ".tmp/00000000000000000003.json.u1"))
    m.forward(
        "PUT",
        "/bucket/t/_delta_log/00000000000000000003.json",
        [("x-amz-copy-source", "/bucket/t/_delta_log/.tmp/00000000000000000003.json.u2")],
        None,
    )
    assert m.attempts() == {("w1", 2): 1, ("w2", 9): 1}
    assert [c.accepted for c in m.claims] == [True, False]
    kinds = m.count_by_kind()
    assert (kinds["claim accepted"], kinds["claim refused"], kinds["commit finish"]) == (1, 1, 3)


@pytest.mark.parametrize(
    "method, target, headers, expected",
    [
        ("GET", "/bucket?list-type=2&prefix=t%2F_delta_log%2F", [], "log read"),
        ("GET", "/bucket/t/_delta_log/00000000000000000001.json", [], "log read"),
        ("HEAD", "/bucket/t/_delta_log/_last_checkpoint", [], "log read"),
        ("PUT", "/bucket/t/part-00000-1.snappy.parquet", [], "data write"),
        ("PUT", "/bucket/t/_delta_log/_commit_x.json.tmp", [], "commit finish"),
        ("POST", "/", [("X-Amz-Target", "DynamoDB_20120810.UpdateItem")], "commit finish"),
        ("POST", "/", [("X-Amz-Target", "DynamoDB_20120810.Query")], "log read"),
        ("GET", "/bucket?location", [], "other"),
    ],
)
def test_requests_are_classified_by_what_they_touch(method, target, headers, expected):
    assert meter.classify(method, target, headers, 200, is_claim=False) == expected


# -- the cloud model ---------------------------------------------------------------------------------


def run_row(writers=1, **overrides):
    row = {"backend": "s3", "writers": writers, "s_outside_requests": 0.010}
    row.update({f"n_{k.replace(' ', '_')}": 0.0 for k in meter.KINDS})
    row.update({"n_data_write": 1.0, "n_log_read": 2.0, "n_claim_accepted": 1.0})
    row.update(overrides)
    return row


def test_the_model_replaces_each_request_by_the_clouds_latency_and_keeps_the_rest():
    projected = model.project(
        run_row(), claim_style="object", cloud={"s3": 0.05, "dynamodb": 0.005}
    )
    assert projected["projected_latency_s"] == pytest.approx(0.010 + 4 * 0.05)
    assert projected["projected_commits_per_s"] == pytest.approx(1 / 0.21)


def test_the_model_caps_claims_on_one_object_at_the_published_rate_but_not_dynamodb_claims():
    many = run_row(writers=16)
    assert model.project(many, claim_style="object", caps={"s3": 15.0})[
        "projected_commits_per_s"
    ] == pytest.approx(15.0)
    locked = model.project(many, claim_style="dynamodb", cloud={"s3": 0.05, "dynamodb": 0.005})
    assert locked["projected_latency_s"] == pytest.approx(0.010 + 3 * 0.05 + 0.005)
    assert locked["projected_commits_per_s"] == pytest.approx(16 / locked["projected_latency_s"])
    overlapping = model.project(
        run_row(s_outside_requests=-1.0),
        claim_style="object",
        cloud={"s3": 0.05, "dynamodb": 0.005},
    )
    assert overlapping["projected_latency_s"] == pytest.approx(
        4 * 0.05
    )  # overlapping requests: nothing outside them


def test_an_aws_chunked_body_is_unwrapped_before_its_tags_are_read():
    payload = body("w4", 11, spark=True)
    half = len(payload) // 2
    wrapped = (
        f"{half:x};chunk-signature=ab\r\n".encode()
        + payload[:half]
        + b"\r\n"
        + f"{len(payload) - half:x};chunk-signature=cd\r\n".encode()
        + payload[half:]
        + b"\r\n0;chunk-signature=ef\r\n\r\n"
    )
    assert meter.decoded([("Content-Encoding", "aws-chunked")], wrapped) == payload
    assert meter.tags_of(meter.decoded([("Content-Encoding", "aws-chunked")], wrapped)) == (
        "w4",
        11,
    )
    assert meter.decoded([], payload) == payload


def test_time_outside_requests_counts_failed_commits_work_against_the_commits_that_landed():
    # two commits landed (0.5 s, 0.7 s), one failed after 1.8 s; requests took 1.5 s in all
    assert stats.outside_requests_per_commit([0.5, 0.7, 1.8], 1.5, 2) == pytest.approx(0.75)
    assert math.isnan(stats.outside_requests_per_commit([1.0], 0.5, 0))
