"""The stores: where a table's files live and the emulators that serve them.

``storage`` (the stores' clients, the one lister, the lock table), ``tables`` (where each table
lives and the options each engine needs to reach it), ``services`` (start, check and stop the
emulators), ``moto_server`` and ``moto_speedups`` (moto with atomic writes), ``versitygw`` (a real
S3 server), ``service_watch`` and ``old_lock`` (the seeds' lock table).

Imports: :mod:`helpers.ground` only.
"""
