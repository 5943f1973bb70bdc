"""The releases and engines the one-page answer (:mod:`helpers.page.decision`) names: each era's deltalake
version (:mod:`helpers.ground.eras`) and Delta Spark's (:mod:`helpers.page.boundaries`); and the mixed run
(``make matrix-mixed``): its CSV, its engines, the order of its two jobs in a condition's words, and how the
page names it.
"""

from __future__ import annotations

from helpers.ground import config, eras
from helpers.page import boundaries as b


def v(era_name: str) -> str:
    """The deltalake version of an era (:mod:`helpers.ground.eras`)."""
    return eras.era(era_name).deltalake_version


SEEDS, INTEROP, CURRENT = v(eras.SEEDS), v(eras.DYNAMODB_INTEROP), v(eras.CURRENT)
LAST_REFUSING, OLD_LOCK, SPARK = (
    v(eras.LAST_REFUSING_DOUBLE_OPTIMIZE),
    v(eras.OLD_LOCK),
    b.DELTA_SPARK.version,
)
SPARK_3 = eras.SPARK_ERAS[eras.GLUE_SPARK].delta_version
"""Delta Spark 3.3.2 on Spark 3.5 (AWS Glue 5, EMR 7), measured beside :data:`SPARK`."""
SPARK_RELEASES = (SPARK_3, SPARK)
"""The Delta Spark releases the page's rows stand for, each measured; any other is not measured."""
LOG_STORE = f"{b.TABLE_PATH_SLASH.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before}"
"""The releases whose DynamoDB log store shares a lock table with Delta Spark's."""

MIXED_CSV = config.DATA_DIR / "conflict_matrix_mixed_dynamodb.csv"
"""The mixed run (``make matrix-mixed``): Delta Spark's DynamoDB log store and deltalake's DynamoDB lock on
one S3 table through one lock table, every pair in both orders."""
MIXED_RUN = "the mixed run on S3 (`make matrix-mixed`)"
MIXED_LINK = "[data/conflict_matrix_mixed_dynamodb.csv](../data/conflict_matrix_mixed_dynamodb.csv)"
"""How a cell of the mixed run was decided, and its evidence, as the page says them."""
MIXED_LOCK_ENGINES = (
    f"spark-dynamodb-then-deltalake-{INTEROP}",
    f"deltalake-{INTEROP}-then-spark-dynamodb",
)
"""The mixed run's engines (``MIXED_CSV``): Delta Spark first, then deltalake, and the other order."""
MIXED_LOCK_ENGINES_3 = (
    f"spark-3.3-dynamodb-then-deltalake-{INTEROP}",
    f"deltalake-{INTEROP}-then-spark-3.3-dynamodb",
)
"""The mixed run's engines with Delta Spark 3.3.2 (``make matrix-mixed MIXED_SPARK_ERA=delta-spark-3.3.2``)."""
MIXED_ORDERS = {
    engine: order
    for engines in (MIXED_LOCK_ENGINES, MIXED_LOCK_ENGINES_3)
    for engine, order in zip(
        engines, ("when Delta Spark's job commits first", "when deltalake's job commits first")
    )
}
"""Each of the mixed run's engines as the order of the two jobs, in a condition's words."""


def mixed_run(engines: tuple[str, ...]) -> bool:
    """Whether a matrix cell's engines are the mixed run's (its evidence ``MIXED_CSV``, no notebook section)."""
    return bool(engines) and all(e in MIXED_ORDERS for e in engines)
