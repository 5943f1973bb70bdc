"""One Delta Spark driver working on catalog-managed tables, in a process (and a JVM) of its own,
started without Spark's testing flag, as a team's job would be:

    <python> -m helpers.catalog.writer SPEC_JSON_FILE

Before the barrier it starts its session (:func:`helpers.catalog.tables.spark_session`) and names
the catalog's tables in its own session catalog. After it, by the spec's ``job``:

* ``append`` (the race): it appends its batches one by one, each as ``INSERT INTO
  default.<table>`` of rows ``(id, writer, batch)``, and records what Delta reported for each;
  the race's checks (:mod:`helpers.catalog.race`) read storage and the catalog instead;
* ``flagless``: it tries each maintenance operation on one table
  (:func:`helpers.catalog.maintenance.attempt_all`); with ``upkeep`` in its spec, it measures what
  4.4.0 does not refuse on such tables first (:func:`helpers.catalog.maintenance.upkeep`). What a
  commit costs is measured by a job of its own (:mod:`helpers.catalog.cost`).

Each records its JVM's ``spark.testing`` property (``testing_flag``, None when unset), so a check
can show the driver ran as a user's would.
"""

from __future__ import annotations

import os
import time

from helpers.writers.processes import run_at_barrier
from helpers.writers.protocol import T_PROCESS_START, spec_process_main

ROWS_PER_BATCH = 10


def batches_of(number: int, batches_per_writer: int) -> list[int]:
    """The batch numbers of the ``number``-th racing writer: ``number * 10 + 1`` onwards, so that
    every writer's batches differ."""
    return [number * 10 + k for k in range(1, batches_per_writer + 1)]


def new_result(spec: dict, **more) -> dict:
    """The record a racing writer fills in and reports: its process, pid, start, appends and error."""
    return {
        "process": spec["process"],
        **more,
        "pid": os.getpid(),
        "t_process_start": T_PROCESS_START,
        "appends": [],
        "error": None,
    }


def append_batches(spark, spec: dict, result: dict) -> None:
    """Append the spec's batches to ``default.<table>`` by name, one commit each, recording when
    each began and ended in ``result["appends"]``."""
    from helpers.catalog.tables import COLUMNS, SCHEMA

    for batch in spec["batches"]:
        started = time.time()
        frame = spark.createDataFrame(batch_rows(spec["process"], batch), COLUMNS)
        frame.writeTo(f"{SCHEMA}.{spec['table']}").append()
        result["appends"].append({"batch": batch, "t_start": started, "t_end": time.time()})


def batch_rows(writer: str, batch: int) -> list[tuple[int, str, int]]:
    """The rows of one batch: ids batch*100+1 .. +ROWS_PER_BATCH, tagged with the writer."""
    return [(batch * 100 + i, writer, batch) for i in range(1, ROWS_PER_BATCH + 1)]


def path_write(spark, spec: dict) -> str:
    """What an append by path (``save(location)``, as to any other Delta table) gets from Delta: its
    error's first line with the table's folder shown as ``<table>``, or ``committed`` (the race's
    checks would then find its rows)."""
    from helpers.catalog import tables

    frame = spark.createDataFrame(batch_rows(spec["process"], 99), tables.COLUMNS)
    try:
        frame.write.format("delta").mode("append").save(spec["location"])
    except Exception as error:  # noqa: BLE001 - the error is the measurement
        text = str(getattr(error, "desc", None) or error)
        line = next(
            (
                part.strip()
                for part in text.splitlines()
                if "[DELTA_" in part or "Exception" in part
            ),
            text.strip(),
        )
        folder = tables.local_path(spec["location"])
        for shown in (
            f"file:{folder}",
            f"file://{folder}",
            str(folder),
        ):  # the table's folder, named as the notebook names it
            line = line.replace(shown, "<table>")
        return line.split(": ", 1)[-1][:600] if line.startswith(":") else line[:600]
    return "committed"


def testing_flag(spark) -> str | None:
    """What makes Spark run as a test, as its ``Utils.isTesting`` reads it in the JVM: the system
    property ``spark.testing`` (what ``-Dspark.testing=true`` sets) and the environment variable
    ``SPARK_TESTING``; e.g. ``spark.testing=true``, both joined by a comma, or None when neither
    is set."""
    system = spark._jvm.java.lang.System
    found = {
        "spark.testing": system.getProperty("spark.testing"),
        "SPARK_TESTING": system.getenv("SPARK_TESTING"),
    }
    return ", ".join(f"{key}={value}" for key, value in found.items() if value is not None) or None


def refuse_testing(spark) -> None:
    """Raise if this driver would run with Spark's testing flag (:func:`testing_flag`): a driver
    that measures what a team meets must not, since the flag changes what Delta does."""
    flag = testing_flag(spark)
    if flag:
        raise RuntimeError(
            f"this driver would run with Spark's testing flag ({flag}), which a team's job never "
            "has and which changes what Delta does: unset it and run again"
        )


def flagless(spec: dict, result: dict) -> dict:
    """The ``flagless`` job: maintenance on ``spec["maintain"]`` (``{"name", "location"}``)."""

    def prepare():
        from helpers.catalog import tables

        spark = tables.spark_session(
            spec["uri"],
            app_name="catalog-flagless",
            extra_conf={"spark.master": "local[1]", "spark.driver.memory": "1g"},
        )
        result["testing_flag"] = testing_flag(spark)
        refuse_testing(spark)
        if spec.get("maintain"):
            table = spec["maintain"]
            tables.open_table(spark, table["name"], tables.COLUMNS, table["location"])
        return spark

    def work(spark) -> None:
        from helpers.catalog import maintenance, tables
        from helpers.catalog.rest import UnityCatalog

        catalog = UnityCatalog(spec["uri"])
        if spec.get("upkeep"):
            result["upkeep"] = maintenance.upkeep(spark, catalog, spec["upkeep"])
        if spec.get("maintain"):
            table = spec["maintain"]
            result["maintenance"] = maintenance.attempt_all(
                spark,
                table["name"],
                table["location"],
                wait=lambda: tables.wait_published(catalog, table["name"]),
            )

    return run_at_barrier(spec, result, prepare, work)


def table_session(spec: dict, result: dict, app_name: str):
    """A racing driver's session (refused with Spark's testing flag, :func:`refuse_testing`), the
    spec's ``table`` named in it and its snapshot read, before the barrier."""
    from helpers.catalog import tables

    spark = tables.spark_session(
        spec["uri"],
        app_name=f"{app_name}-{spec['process']}",
        extra_conf={"spark.master": "local[1]", "spark.driver.memory": "1g"},
    )
    result["testing_flag"] = testing_flag(spark)
    refuse_testing(spark)
    tables.open_table(spark, spec["table"], tables.COLUMNS, spec["location"])
    spark.table(f"{tables.SCHEMA}.{spec['table']}").limit(1).collect()
    return spark


def run(spec: dict) -> dict:
    result = new_result(spec)
    if spec.get("job") == "flagless":
        return flagless(spec, result)

    def prepare():
        spark = table_session(spec, result, "catalog-writer")
        if spec.get("try_path_write"):
            result["path_write"] = path_write(spark, spec)
        return spark

    def work(spark) -> None:
        from helpers.catalog import tables
        from helpers.catalog.rest import UnityCatalog

        append_batches(spark, spec, result)
        # Delta publishes on a thread of its own, which dies with this JVM: stay until it has
        tables.wait_published(UnityCatalog(spec["uri"]), spec["table"])

    return run_at_barrier(spec, result, prepare, work)


if __name__ == "__main__":
    spec_process_main("helpers.catalog.writer", run)
