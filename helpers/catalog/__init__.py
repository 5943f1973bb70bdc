"""Catalog-managed Delta tables (notebook 15): commits that a Unity Catalog server ratifies.

* :mod:`~helpers.catalog.server_build`: the server (olai-uc-server), built from its crate into
  ``.cache/uc/`` (``make uc-server``; ``make test`` builds it in the background);
* :mod:`~helpers.catalog.server`: the server started on 127.0.0.1 for a run;
* :mod:`~helpers.catalog.rest`: what the workbook asks the server itself (a table's creation, the
  catalog's view of its commits);
* :mod:`~helpers.catalog.tables`: Delta Spark sessions that commit through the server, and their tables;
* :mod:`~helpers.catalog.writer` and :mod:`~helpers.catalog.race`: several drivers racing appends,
  and the checks read from storage and the catalog;
* :mod:`~helpers.catalog.driver`: a Spark driver without the testing flag that takes one command
  at a time (a team's job, step by step);
* :mod:`~helpers.catalog.cost` and its record (:mod:`~helpers.catalog.cost_record`): what a
  commit through the catalog costs, in requests and in time;
* :mod:`~helpers.catalog.maintenance` and :mod:`~helpers.catalog.upkeep`: OPTIMIZE, VACUUM and
  REORG tried on such a table, and what 4.4.0 does to keep it in check (auto compaction, metadata
  cleanup);
* :mod:`~helpers.catalog.kernel_writer` and :mod:`~helpers.catalog.kernel_runs`: Java Delta
  Kernel's writer, raced beside Delta Spark, once or repeated with its retries counted;
* :mod:`~helpers.catalog.failures`: the catalog failing at a known point behind a gate, with its
  records (:mod:`~helpers.catalog.failure_records`), the server kept in SQLite
  (:mod:`~helpers.catalog.persistent_server`) and the log read and written by hand
  (:mod:`~helpers.catalog.log_by_hand`); :mod:`~helpers.catalog.outage` and its record
  (:mod:`~helpers.catalog.outage_record`): the catalog down for minutes;
* :mod:`~helpers.catalog.object_storage` and :mod:`~helpers.catalog.vended`: such tables on
  Azurite and S3, each driver reaching the store with the credential the catalog vends, and what
  that credential reaches (:mod:`~helpers.catalog.credential_reach`);
* :mod:`~helpers.catalog.long_run`: the parts that take minutes, as the committed run
  ``data/catalog_run.json`` (``make catalog-run``).

Imports: :mod:`helpers.bench` and every layer below it.
"""
