"""The progress of a run of writers: live while it runs, one static line once it is over.

In a notebook the live part is a widget (a bar and a status), which a saved notebook cannot
replay; so the widget's text stands for "live only", and when the run ends a plain line states
the final state (``8 deltalake 0.22.3 writers: 8/8 done, 1 committed, 7 failed``), which is what
an executed copy shows on GitHub or offline. Outside a notebook, status changes go to stderr:
on a terminal as one line rewritten in place; to a log, the first :data:`LOG_FIRST` of them, then
at most one every :data:`LOG_EVERY_S` seconds (a torture run changes its status thousands of times).
"""

from __future__ import annotations

import sys
import time

LIVE_ONLY = "(live progress of the run: shown while it runs)"
LOG_FIRST = 10
LOG_EVERY_S = 30.0


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class RunProgress:
    """``status(text)`` while waiting, ``done(k)`` as writers exit, ``finish(line)`` at the end."""

    def __init__(self, label: str, total: int, *, enabled: bool = True) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self._status = ""
        self._widgets = None
        self._line_open = False  # a terminal's status line, not yet ended
        self._logged: list[float] = []  # when each status line went to a log
        if enabled and _in_kernel():
            self._widgets = self._show()

    def _show(self):
        try:
            import ipywidgets
            from IPython.display import display
        except ImportError:
            return None

        class Box(ipywidgets.HBox):
            def __repr__(self) -> str:  # the text a saved notebook keeps: never a frozen bar
                return LIVE_ONLY

        bar = ipywidgets.IntProgress(
            value=0,
            min=0,
            max=self.total,
            description=self.label,
            style={"description_width": "initial"},
        )
        status = ipywidgets.Label(value="starting")
        box = Box([bar, status])
        display(box)
        return bar, status, box

    def status(self, text: str) -> None:
        if not self.enabled or text == self._status:
            return
        self._status = text
        if self._widgets is not None:
            self._widgets[1].value = text
        elif sys.stderr.isatty():
            print(f"\r{self.label}: {text}\x1b[K", end="", file=sys.stderr, flush=True)
            self._line_open = True
        elif len(self._logged) < LOG_FIRST or time.monotonic() - self._logged[-1] >= LOG_EVERY_S:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)
            self._logged.append(time.monotonic())

    def done(self, count: int) -> None:
        if self._widgets is not None:
            self._widgets[0].value = count

    def finish(self, line: str) -> None:
        """Close the live part and print the final state."""
        if not self.enabled:
            return
        if self._widgets is not None:
            self._widgets[2].close()
        if self._line_open:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
            self._line_open = False
        print(f"{self.label}: {line}", flush=True)
