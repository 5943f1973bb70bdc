"""How the workbook starts Jupyter kernels: over Unix sockets in a short private folder.

A kernel listens on five sockets. The workbook's kernels use Jupyter's IPC transport: each socket
is a file readable by this user only, where TCP ports on 127.0.0.1 would let any local user
connect (and ipykernel warns about unencrypted TCP at every start). A Unix socket's path has a
hard limit, :data:`SOCKET_PATH_MAX` bytes (``sizeof(sockaddr_un.sun_path)`` less its final NUL),
and Jupyter names the sockets after the connection file in its runtime folder, such as
``<folder>/kernel-<36-character id>-ipc-1``: from a clone or a home folder a few dozen characters
deep, that passes the limit and the kernel dies at its start (``ZMQError: ipc path ... is longer
than 107 characters``).

So every kernel the workbook starts names its sockets in a folder made for the run under the
system's temporary folder (``tempfile.mkdtemp``: mode 0700, this user only), removed when the run
ends, whatever folder the clone sits in:

- papermill's kernels (``make workbook``, ``make outputs``, the tests that run a notebook):
  :func:`papermill_kernel_manager`;
- JupyterLab (``make lab``, ``make lab-check``): :func:`lab_arguments`, with the server's
  kernel manager class :data:`LabKernelManager`; ``make lab`` is ``python -m helpers.jupyter.kernels lab``.

When ``TMPDIR`` itself is too deep (macOS gives each user a folder about 50 characters deep),
``/tmp`` is tried; when no folder is short enough, kernels talk over TCP on 127.0.0.1 instead and
:func:`socket_folder` says so once. nbval's kernels (``make test``) always use TCP on 127.0.0.1
(nbval starts them with its own kernel manager), where no path limit applies.
``make preflight`` prints :func:`preflight_note`. Importing this module needs only the standard
library, so the preflight check can use it before any environment exists.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Iterator, Sequence

SOCKET_PATH_MAX = 107 if sys.platform.startswith("linux") else 103
"""The longest path a Unix socket may have, in bytes: ``sun_path`` holds 108 bytes on Linux and 104
on macOS and the BSDs, the final NUL included. (pyzmq gives the same as ``zmq.IPC_PATH_MAX_LEN``.)"""
FOLDER_PREFIX = "workbook-kernels-"
"""The socket folder's name before ``mkdtemp``'s 8 random characters."""
SOCKET_STEM_LENGTH = 13
"""A kernel's sockets are ``k<12 hex digits>-<n>`` in the folder: ``k`` and a random id, so
kernels of one server never share a name."""
LONGEST_SOCKET_NAME = "k" + "0" * (SOCKET_STEM_LENGTH - 1) + "-65535"
"""The longest socket name a kernel gets in the folder (jupyter_client numbers the five sockets
from 1 up, skipping names in use)."""
JUPYTER_SOCKET_NAME = "kernel-00000000-0000-0000-0000-000000000000-ipc-5"
"""How Jupyter names a kernel's socket by default, in its runtime folder."""
LAB_CHECK_RUNTIME = Path("build", "lab-check", "jupyter-runtime")
"""Where ``make lab-check`` keeps its server's runtime folder, inside the clone."""

MODULE = "helpers.jupyter.kernels"
"""This module's import name, by which JupyterLab finds :data:`LabKernelManager` (also when it runs
as ``python -m helpers.jupyter.kernels``, where ``__name__`` is ``__main__``)."""

_said: set[str] = set()


def socket_path_length(folder: str | Path, name: str = LONGEST_SOCKET_NAME) -> int:
    """The length in bytes of the socket ``name`` in ``folder``, as the kernel passes it to bind()."""
    return len(os.fsencode(os.path.join(os.fspath(folder), name)))


def fits(folder: str | Path, name: str = LONGEST_SOCKET_NAME) -> bool:
    return socket_path_length(folder, name) <= SOCKET_PATH_MAX


def candidate_parents() -> list[Path]:
    """Where a socket folder may be made, in order: the system's temporary folder (``TMPDIR``),
    then ``/tmp``; each only if it is a folder this user may write in."""
    found: list[Path] = []
    for parent in (tempfile.gettempdir(), "/tmp"):
        path = Path(parent)
        if path not in found and path.is_dir() and os.access(path, os.W_OK | os.X_OK):
            found.append(path)
    return found


def _made_in(parent: Path) -> Path:
    """What ``mkdtemp`` would name a socket folder in ``parent`` (the same length)."""
    return parent / (FOLDER_PREFIX + "x" * 8)


def short_parent() -> Path | None:
    """The first of :func:`candidate_parents` whose socket folder fits every socket; None if none does."""
    return next((p for p in candidate_parents() if fits(_made_in(p))), None)


def fallback_reason() -> str:
    """Why kernels talk over TCP: every folder tried, with the length its sockets would have."""
    tried = (
        ", ".join(f"{p} ({socket_path_length(_made_in(p))} bytes)" for p in candidate_parents())
        or "none writable"
    )
    return (
        f"kernels talk over TCP on 127.0.0.1: no temporary folder is short enough for their Unix sockets "
        f"(at most {SOCKET_PATH_MAX} bytes; tried {tried}). Set TMPDIR to a short folder, such as /tmp, "
        "to use Unix sockets."
    )


def say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        print(f"note: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def socket_folder() -> Iterator[Path | None]:
    """A new private folder for kernels' sockets (mode 0700), removed afterwards with whatever is
    left in it; None when no folder is short enough (then kernels use TCP, said once)."""
    parent = short_parent()
    if parent is None:
        say_once(fallback_reason())
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _short_sockets(base: type) -> type:
    """``base`` (a jupyter_client kernel manager class) naming its IPC sockets in ``socket_folder``."""
    from traitlets import Unicode, default

    class ShortSockets(base):
        socket_folder = Unicode(
            "", config=True, help="The folder for the kernel's Unix sockets (empty: TCP)."
        )

        @default("transport")
        def _transport_default(self) -> str:
            return "ipc" if self.socket_folder else "tcp"

        @default("ip")
        def _ip_default(self) -> str:
            if self.transport == "ipc" and self.socket_folder:
                return os.path.join(
                    self.socket_folder, "k" + uuid.uuid4().hex[: SOCKET_STEM_LENGTH - 1]
                )
            return super()._ip_default()

    return ShortSockets


def papermill_kernel_manager(folder: Path | None) -> type:
    """The kernel manager class papermill runs notebooks with: jupyter_client's, its sockets in ``folder``."""
    from jupyter_client import AsyncKernelManager
    from traitlets import default

    class PapermillKernelManager(_short_sockets(AsyncKernelManager)):
        @default("socket_folder")
        def _socket_folder_default(self) -> str:
            return "" if folder is None else str(folder)

    return PapermillKernelManager


def _lab_kernel_manager() -> type:
    from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

    class LabKernelManager(_short_sockets(ServerKernelManager)):
        """Jupyter Server's kernel manager, its sockets in ``--LabKernelManager.socket_folder``."""

    return LabKernelManager


def __getattr__(name: str):
    """``LabKernelManager``, made on first use (by JupyterLab, which names it in its configuration),
    so that importing this module needs no Jupyter package."""
    if name == "LabKernelManager":
        globals()[name] = _lab_kernel_manager()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lab_arguments(folder: Path | None) -> list[str]:
    """JupyterLab's command-line settings for its kernels: sockets in ``folder``, or TCP."""
    if folder is None:
        return ["--KernelManager.transport=tcp"]
    return [
        f"--MappingKernelManager.kernel_manager_class={MODULE}.LabKernelManager",
        f"--LabKernelManager.socket_folder={folder}",
        "--KernelManager.transport=ipc",
    ]


def preflight_note(root: Path) -> str | None:
    """What ``make preflight`` says of kernel sockets: None when the clone is shallow enough for
    Jupyter's own socket names and a temporary folder fits; otherwise what the workbook does."""
    where = root / LAB_CHECK_RUNTIME
    deep = not fits(where, JUPYTER_SOCKET_NAME)
    parent = short_parent()
    if parent is None:
        return (
            f"this clone's path is {len(os.fsencode(str(root)))} bytes long. " if deep else ""
        ) + fallback_reason()
    if not deep:
        return None
    return (
        f"this clone's path is {len(os.fsencode(str(root)))} bytes long: a kernel's Unix socket in a folder of it "
        f"would take {socket_path_length(where, JUPYTER_SOCKET_NAME)} bytes, more than the {SOCKET_PATH_MAX} allowed. "
        f"The workbook names kernel sockets in {_made_in(parent).parent}/{FOLDER_PREFIX}XXXXXXXX/ instead "
        f"({socket_path_length(_made_in(parent))} bytes), so nothing needs doing."
    )


def lab(root: str, extra: Sequence[str] = ()) -> int:
    """``make lab``: JupyterLab on 127.0.0.1 serving ``root``, its kernels' sockets in a private
    folder removed when the server stops. Runs in this process, as ``python -m jupyter lab``."""
    from jupyterlab.labapp import LabApp

    with socket_folder() as folder:
        listen = (
            []
            if any(a.startswith(("--ip=", "--ServerApp.ip=")) for a in extra)
            else ["--ip=127.0.0.1"]
        )
        argv = [*listen, f"--ServerApp.root_dir={root}", *lab_arguments(folder), *extra]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        LabApp.launch_instance(argv=argv)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m helpers.jupyter.kernels", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser(
        "lab", help="JupyterLab on 127.0.0.1, its kernels' sockets in a private folder"
    )
    start.add_argument("root", help="the folder it serves (notebooks or student)")
    commands.add_parser("where", help="where kernels' sockets go on this machine")
    args, extra = parser.parse_known_args(argv)
    if args.command == "where":
        parent = short_parent()
        print(
            f"{parent}/{FOLDER_PREFIX}XXXXXXXX/ ({socket_path_length(_made_in(parent))} of {SOCKET_PATH_MAX} bytes)"
            if parent
            else fallback_reason()
        )
        return 0
    if not Path(args.root).is_dir():
        print(
            f"error: {args.root} is not a folder: use notebooks (the default) or student",
            file=sys.stderr,
        )
        return 2
    return lab(args.root, extra)


if __name__ == "__main__":
    sys.exit(main())
