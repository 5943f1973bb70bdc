"""``python -m helpers.torture`` (``make torture``) judges its run as notebook 12 does
(:func:`helpers.torture.verdict.check_run`): a run that falls short exits non-zero and says how.

The run is a real one, as small as the harness allows (one protocol, 8 writers, 5 operations
each, no kills, no restarts, no Spark read), in which one writer is given one operation fewer than
the plan the run records: what a writer that stopped early leaves.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid

from helpers.ground import config
from helpers.torture import run

STOPS_EARLY = """
import sys
from helpers.torture import plan
from helpers.torture.__main__ import main

planned = plan.operations

def one_short(*args, **kwargs):
    operations = planned(*args, **kwargs)
    operations["w2"] = operations["w2"][:-1]  # w2 stops one operation early
    return operations

plan.operations = one_short
sys.exit(main(sys.argv[1:]))
"""


def test_a_run_whose_writer_stopped_early_exits_non_zero_naming_the_shortfall():
    name = f"test-stopped-early-{uuid.uuid4().hex[:8]}"
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                STOPS_EARLY,
                "--name",
                name,
                "--protocols",
                "azure",
                "--per-writer",
                "5",
                "--kills",
                "0",
                "--restarts",
                "0",
                "--without-spark-read",
            ],
            cwd=config.ROOT,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        assert "the run falls short" in done.stderr
        assert "azure: operations made: expected 40, found 39" in done.stderr, done.stderr[-2000:]
        assert "spark" not in run.load(name).protocols.loc[0, "readers"].split(
            ", "
        )  # left out, as asked
    finally:
        shutil.rmtree(run.RESULTS_DIR / name, ignore_errors=True)


def test_a_spark_protocol_without_the_spark_read_is_refused_before_anything_runs():
    name = f"test-no-spark-read-{uuid.uuid4().hex[:8]}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.torture",
            "--name",
            name,
            "--protocols",
            "spark-dynamodb",
            "--per-writer",
            "5",
            "--without-spark-read",
        ],
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1
    assert (
        "A Spark protocol's VACUUM runs in the Spark read" in done.stderr
        and "spark-dynamodb" in done.stderr
    ), done.stderr
    assert not (run.RESULTS_DIR / name).exists()  # refused before its folder was made
