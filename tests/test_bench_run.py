"""The benchmark's set-up and its answers to bad input (no emulator needed: each is refused first)."""

from __future__ import annotations

import pytest

from helpers.bench import __main__ as cli
from helpers.bench import run, stats


def test_each_writer_appends_batches_of_its_own():
    batches = run.batches_of(3, 4)
    assert batches == {"w1": [1, 2, 3, 4], "w2": [5, 6, 7, 8], "w3": [9, 10, 11, 12]}
    assert len({b for bs in batches.values() for b in bs}) == 12


def test_protocols_name_their_claim_store_and_uri_scheme():
    assert run.PROTOCOLS["spark-drivers"].table_uri("x").startswith("s3a://")
    assert run.PROTOCOLS["s3-conditional-put"].table_uri("x").startswith("s3://")
    assert run.PROTOCOLS["azure"].table_uri("x").startswith("az://")
    assert run.PROTOCOLS["s3-dynamodb-lock"].storage_options()["AWS_S3_LOCKING_PROVIDER"] == "dynamodb"
    assert "AWS_S3_LOCKING_PROVIDER" not in run.PROTOCOLS["s3-conditional-put"].storage_options()
    assert run.PROTOCOLS["spark-threads"].storage_options()["spark.master"] == "local[2]"
    assert all(1 in p.writer_counts for p in run.PROTOCOLS.values())  # every protocol has its serial limit


def test_an_unknown_protocol_or_a_bad_count_is_refused_by_name():
    with pytest.raises(stats.BenchError, match="Unknown protocol 's3-condtional-put'; the benchmark has azure"):
        run.protocol("s3-condtional-put")
    with pytest.raises(stats.BenchError, match="appends must be a whole number >= 1"):
        run.benchmark(["azure"], appends=0)


@pytest.mark.parametrize("argv, message", [
    (["--protocols", "s3-condtional-put"], "unknown protocol(s) s3-condtional-put; choose from azure"),
    (["--writers", "1,four"], "expected whole numbers separated by commas"),
    (["--writers", "0"], "expected writer counts >= 1"),
    (["--appends", "-3"], "expected a whole number >= 1"),
])
def test_the_command_line_says_what_is_wrong(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_loading_results_that_are_not_there_says_how_to_make_them(tmp_path):
    with pytest.raises(stats.BenchError, match="run `make bench` first"):
        run.load(tmp_path / "nothing")
