"""A readable copy of each notebook the answer page cites, so that an evidence link opens its section in a
browser instead of a notebook's JSON: ``docs/evidence/NN_topic.html``, the learner's edition (``student/``)
rendered by nbconvert, every section at its anchor (``#section-5``). Pictures are left out, each replaced by
a line that says so (the notebook holds them), which keeps the copies small; the page links the notebook
beside the copy. ``make student`` writes them after the student edition::

    python -m helpers.jupyter.rendered           # writes docs/evidence/*.html
    python -m helpers.jupyter.rendered --check   # exit 1 if one differs from a fresh render
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Sequence
from pathlib import Path

from helpers.ground import config
from helpers.page import notebook_sections

FOLDER = config.ROOT / "docs" / "evidence"
STUDENT = config.ROOT / "student"
PICTURE = "(a picture: open the notebook to see it)"
STYLE = (
    "body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:.75rem;color:#1f2328}"
    "pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;font-size:.8rem}"
    "table{border-collapse:collapse;font-size:.8rem;display:block;overflow-x:auto}"
    "td,th{border:1px solid #d0d7de;padding:.2rem}.prompt{display:none}.note{color:#57606a}"
    "img{max-width:100%}"
)


def cited() -> list[str]:
    """The notebooks the answer page cites (each :class:`helpers.page.notebook_sections.Section`'s), in order."""
    sections = [
        value
        for value in vars(notebook_sections).values()
        if isinstance(value, notebook_sections.Section)
    ]
    return sorted({section.notebook for section in sections})


def render(notebook: str) -> str:
    """One notebook of the learner's edition as a static HTML page, its pictures left out."""
    import nbformat
    from nbconvert import HTMLExporter

    node = nbformat.read(STUDENT / notebook, as_version=4)
    for cell in node.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if any(kind.startswith("image/") for kind in data):
                output["data"] = {"text/plain": PICTURE}
    body, _ = HTMLExporter(template_name="basic").from_notebook_node(node)
    source = f"../../student/{notebook}"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(notebook)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f'<p class="note">A copy to read of <a href="{source}">{html.escape(notebook)}</a> (the learner\'s '
        "edition, with its committed outputs; pictures left out): open the notebook to run it.</p>\n"
        f"{body}\n</body>\n</html>\n"
    )


def stale(folder: Path = FOLDER) -> list[str]:
    """The copies missing or not what :func:`render` writes now, and files of no cited notebook."""
    wanted = {Path(n).with_suffix(".html").name: n for n in cited()}
    found = []
    for name, notebook in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != render(notebook):
            found.append(name)
    found += sorted(p.name for p in folder.glob("*.html") if p.name not in wanted)
    return found


def write(folder: Path = FOLDER) -> list[Path]:
    """Write every cited notebook's copy, and remove a copy no section cites any more."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    wanted = set()
    for notebook in cited():
        path = folder / Path(notebook).with_suffix(".html").name
        path.write_text(render(notebook), encoding="utf-8")
        wanted.add(path.name)
        written.append(path)
    for old in folder.glob("*.html"):
        if old.name not in wanted:
            old.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.jupyter.rendered", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a copy is stale")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for name in found:
            print(
                f"docs/evidence/{name} is not what `python -m helpers.jupyter.rendered` writes now"
            )
        return 1 if found else 0
    for path in write():
        print(f"wrote {path.relative_to(config.ROOT)} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
