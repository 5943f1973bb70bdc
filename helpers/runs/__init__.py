"""What every run of racing writers shares: the runner, the auditor, the commit gate, jobs raced in
one Spark driver, the timeline, and the committed results of the full runs.

``runner`` (N writer processes at once on one table; ``run_processes`` each writer's spec, files
and result row, ``run_result`` what a run leaves), ``audit`` (storage set against what the writers
said; ``audit_record`` the record it returns, ``audit_frames`` its tables), ``commitgate`` (a proxy
that holds a commit's requests; ``gate_http`` its server and request handler, ``gate_log`` what it
logs), ``driver_jobs`` (append jobs raced in one driver), ``plots`` (a run's timeline) and
``full_runs`` (what the notebooks show of the long runs).

Imports: :mod:`helpers.writers` and every layer below it.
"""
