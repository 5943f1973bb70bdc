"""The writer processes: one process per writer, racing for the next commit of one table.

* :mod:`helpers.writers.protocol`: the spec, the result, the barrier, the Engine shape;
* one module per engine: :mod:`~helpers.writers.deltalake_engine` (delta-rs, every era),
  :mod:`~helpers.writers.daft_engine` (the kernel's and the seeds' eras) and :mod:`~helpers.writers.spark_engine` (the kernel's);
* ``python -m helpers.writers``: the process itself (:mod:`helpers.writers.__main__`).

The protocol's names are re-exported here: ``writers.WriterSpec``, ``writers.COMMITTED``, ...

Imports: :mod:`helpers.spark` and every layer below it.
"""

from helpers.writers.protocol import (  # noqa: F401
    COMMITTED,
    ENGINES,
    FAILED,
    BarrierTimeout,
    Engine,
    EngineUnavailable,
    SpecError,
    TableNotFoundError,
    WriterResult,
    WriterSpec,
    check_max_commit_retries,
    engine_class,
    go_file,
    gone_file,
    one_line,
    open_barrier,
    ready_file,
    wait_at_barrier,
    write_result,
    writer_tags,
)

MODULE = "helpers.writers"
"""What the runner runs: ``<era python> -m helpers.writers SPEC``, from the workbook's folder."""


def code(spec: WriterSpec) -> str:
    """What a writer process runs for ``spec``: its engine's library calls, as Python to copy
    (:meth:`Engine.code`; credentials masked). Imports no engine library."""
    return engine_class(spec.engine).code(spec)
