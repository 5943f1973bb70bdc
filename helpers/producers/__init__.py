"""Many producers, one table (notebook 14): producers stage Parquet data files and hand them over;
one committer commits them in batches, each batch one delta-rs transaction carrying an
idempotent-write id, so a restart or a lost answer commits every batch exactly once.

* :mod:`helpers.producers.layout`: the table's staging names, rows and file system;
* :mod:`helpers.producers.producer`: a producer process;
* :mod:`helpers.producers.committer`: the committer process and :func:`~helpers.producers.committer.commit_batch`;
* :mod:`helpers.producers.queue`: the committer's bounded listings of the queue, and taking a batch's markers off it;
* :mod:`helpers.producers.cleanup`: deleting what was staged and landed;
* :mod:`helpers.producers.check`: exactly once, read from storage;
* :mod:`helpers.producers.faults`: the lost answer and the kill mid-commit;
* :mod:`helpers.producers.run` and :mod:`helpers.producers.scenarios`: the processes, and what notebook 14 runs;
* :mod:`helpers.producers.results`, :mod:`helpers.producers.answer`: the full run's tables, and the answer page's section;
* :mod:`helpers.producers.profile`, :mod:`helpers.producers.figures`: a commit step by step beside a plain append, its
  cost against the queue's length; their tables, plot and the model for more cores;
  :mod:`helpers.producers.commit_steps`: the process that commits and times each step, for the
  profile and for the committer alone at the serial limit;
* :mod:`helpers.producers.spark_stream`: Structured Streaming's ``foreachBatch`` with ``txnAppId`` / ``txnVersion``.

``python -m helpers.producers`` (``make producers``) makes the full run.

Imports: the torture run's and the probe's layer and every layer below it.
"""
