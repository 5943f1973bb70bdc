"""A Delta table as storage holds it, and the rows it is fed.

``delta_log`` (commit file names and the workbook's commit tags), ``table_files`` (data files, by
the log and by the store), ``integrity`` (a table's problems, read from storage alone)
and ``landing`` (the landing batches every writer appends).

Imports: :mod:`helpers.stores` and :mod:`helpers.ground`.
"""
