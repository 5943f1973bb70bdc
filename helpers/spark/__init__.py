"""Spark: sessions with Delta Lake on each store, what makes a driver start fast, and a real
standalone cluster.

``sessions`` (the session builders), ``spark_start`` (the resolved-jars and class-archive caches),
``jars`` (the jars fetched, pruned and compiled, and the class archive built: ``make install``) and
``cluster`` (a master and two workers on 127.0.0.1). ``java/`` holds the workbook's Java sources.

Imports: :mod:`helpers.delta`, :mod:`helpers.stores` and :mod:`helpers.ground`.
"""
