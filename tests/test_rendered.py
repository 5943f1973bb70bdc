"""docs/evidence/: a copy to read of each notebook the answer page cites, current, with every cited
section at its anchor, and a stale or missing copy found."""

from __future__ import annotations

from helpers.jupyter import rendered
from helpers.page import notebook_sections


def test_every_cited_notebook_has_a_current_copy_with_its_sections():
    assert rendered.stale() == [], "run `python -m helpers.jupyter.rendered` (make student does)"
    for value in vars(notebook_sections).values():
        if isinstance(value, notebook_sections.Section):
            page, _, anchor = value.rendered.partition("#")
            text = (rendered.FOLDER.parent / page).read_text(encoding="utf-8")
            assert f'id="{anchor}"' in text, value.rendered
            assert rendered.PICTURE in text or "<img" not in text


def test_a_stale_a_missing_and_a_stray_copy_are_found(tmp_path):
    for path in rendered.FOLDER.glob("*.html"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    first = sorted(tmp_path.glob("*.html"))[0]
    first.write_text(first.read_text(encoding="utf-8").replace("</body>", "<p>edited</p></body>"))
    sorted(tmp_path.glob("*.html"))[1].unlink()
    (tmp_path / "99_gone.html").write_text("<html></html>")
    found = rendered.stale(tmp_path)
    assert first.name in found and "99_gone.html" in found and len(found) == 3
