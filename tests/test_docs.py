"""docs/facilitator.md: every test it cites as a fix's check exists, and its agenda times every notebook."""

import re

from helpers import config, workbook

GUIDE = config.ROOT / "docs" / "facilitator.md"


def test_every_cited_check_exists():
    text = GUIDE.read_text(encoding="utf-8")
    cited = re.findall(r"`tests/(\w+\.py)(?:::(\w+))?`", text)
    assert cited, "the guide names the tests that check its fixes"
    for file, function in cited:
        source = (config.ROOT / "tests" / file).read_text(encoding="utf-8")
        assert not function or re.search(rf"^def {function}\(", source, re.M), f"tests/{file}::{function}"


def test_the_agenda_times_every_notebook():
    agenda = GUIDE.read_text(encoding="utf-8").split("## Agenda", 1)[1].split("\n## ", 1)[0]
    timed = set(re.findall(r"\b(\d\d): (?:\d+ / )?\d+ s", agenda))  # cold / warm, or warm alone (footnoted)
    assert timed == {p.name[:2] for p in workbook.notebooks()}
