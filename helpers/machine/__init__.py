"""This machine against what the workbook needs: ``preflight`` (what ``make install`` cannot
install for you, asked of each tool's own check) and ``environment`` (what is installed, against
what is pinned: notebook 00).

Imports: any part of the house, since it asks each part about its own tools.
"""
