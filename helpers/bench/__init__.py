"""The commit-throughput benchmark: commits per second, latency and attempts per commit for each
commit protocol as concurrent writers grow, with lost commits counted from storage.

* :mod:`helpers.bench.run`: the protocols, a whole benchmark, the tidy results;
* :mod:`helpers.bench.protocols`: what a protocol is, and its copies per S3 server;
* :mod:`helpers.bench.one_run`: one run, N writers released together on a fresh table;
* :mod:`helpers.bench.worker`: a writer process (runs in the protocol's era);
* :mod:`helpers.bench.meter`: the request meter (attempts and time per request kind, at the door);
* :mod:`helpers.bench.probe`: the emulators' per-request latency, measured in the same run;
* :mod:`helpers.bench.model`: the projection to published cloud latencies, with its assumptions;
* :mod:`helpers.bench.stats`: percentiles, figures, ratios and loss counting (unit-tested);
* :mod:`helpers.bench.plots`: the curves and the breakdown.

``python -m helpers.bench`` (``make bench``) runs the full benchmark.

Imports: :mod:`helpers.runs` and every layer below it.
"""
