"""The store probe: does an S3 store give Delta writers what they rely on? (:mod:`helpers.probe.cli`,
the command; :mod:`helpers.probe.objects`, the contention checks.)

Imports: :mod:`helpers.bench` and every layer below it.
"""
