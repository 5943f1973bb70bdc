"""The notebooks as Jupyter runs them: kernels, execution, the student edition, JupyterLab in a
real browser, and a notebook's parameters.

``kernels`` (kernels over short Unix sockets), ``workbook`` (execute, render, tidy), ``student``
(the edition without answers), ``lab_server`` and ``lab_check`` (``make lab-check``) and
``parameters`` (a notebook's parameters checked before anything runs) and ``rendered`` (a copy to read of
each notebook the answer page cites, ``docs/evidence/``).

Imports: :mod:`helpers.ground`, and :mod:`helpers.page` for the sections the answer page cites.
"""
