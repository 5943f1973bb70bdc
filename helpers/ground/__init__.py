"""The ground every other part stands on: settings, eras, progress lines, ports and processes,
the machine's tools, and a notebook's checks.

``config`` (paths, ports, names, versions), ``eras`` (the delta-rs eras and their environments),
``progress``, ``local_processes`` (free ports, detached processes, whether one lives),
``forkserver`` (an era's Python that forks a run's processes), ``tools``
(which tools this machine has, at which version) and ``checks`` (what a notebook states, asserted).

Imports: the standard library and itself only (at module level), so every module here loads in
every era's Python.
"""
