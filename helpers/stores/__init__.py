"""The stores: where a table's files live and the emulators that serve them.

``storage`` (the stores' clients, the one lister, the lock table), with ``store_clients`` (how a
client is built), ``store_trouble`` (what a StorageError says) and ``store_check`` (the probe of a
writer's store); ``tables`` (where each table lives and the options each engine needs to reach
it), ``services`` (start, check and stop the emulators), with ``service_process`` (a service's
process, log and pid file) and ``service_probes`` (which server answers on a port);
``moto_server`` and ``moto_speedups`` (moto with atomic writes), ``versitygw`` (a real S3
server), ``service_watch`` and ``old_lock`` (the seeds' lock table).

Imports: :mod:`helpers.ground` only.
"""
