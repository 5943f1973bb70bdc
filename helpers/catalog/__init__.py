"""Catalog-managed Delta tables (notebook 15): commits that a Unity Catalog server ratifies.

* :mod:`~helpers.catalog.server`: the server (olai-uc-server), built from its crate into
  ``.cache/uc/`` (``make uc-server``) and started on 127.0.0.1 for a run;
* :mod:`~helpers.catalog.rest`: what the workbook asks the server itself (a table's creation, the
  catalog's view of its commits);
* :mod:`~helpers.catalog.tables`: Delta Spark sessions that commit through the server, and their tables;
* :mod:`~helpers.catalog.writer` and :mod:`~helpers.catalog.race`: several drivers racing appends,
  and the checks read from storage and the catalog;
* :mod:`~helpers.catalog.cost`: what a commit through the catalog costs beside put-if-absent;
* :mod:`~helpers.catalog.maintenance`: OPTIMIZE, VACUUM and REORG tried on such a table;
* :mod:`~helpers.catalog.kernel_writer`: Java Delta Kernel's writer, raced beside Delta Spark;
* :mod:`~helpers.catalog.failures`: the catalog failing at a known point behind a gate, with its
  records (:mod:`~helpers.catalog.failure_records`), the server kept in SQLite
  (:mod:`~helpers.catalog.persistent_server`) and the log read and written by hand
  (:mod:`~helpers.catalog.log_by_hand`);
* :mod:`~helpers.catalog.object_storage`: such tables on Azurite and S3, through the server's
  credential vending.

Imports: :mod:`helpers.bench` and every layer below it.
"""
