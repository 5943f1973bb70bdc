"""The notebooks as Jupyter runs them: kernels, execution, the student edition, JupyterLab in a
real browser, and a notebook's parameters.

``kernels`` (kernels over short Unix sockets), ``workbook`` (execute, render, tidy), ``student``
(the edition without answers), ``lab_server`` and ``lab_check`` (``make lab-check``) and
``parameters`` (a notebook's parameters checked before anything runs) and ``rendered`` (a copy to read of
each notebook the answer page cites, ``docs/evidence/``) and ``markdown_wrap`` (the notebooks'
markdown wrapped at 100 characters, ``make format``).

Imports: :mod:`helpers.ground`, :mod:`helpers.stores` for the service watch's sentence when a
notebook fails, and :mod:`helpers.page` for the sections the answer page cites.
"""
