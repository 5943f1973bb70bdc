"""docs/facilitator.md: every test it cites as a fix's check exists, and its agenda times every notebook."""

import re

from helpers.ground import config
from helpers.jupyter import workbook

GUIDE = config.ROOT / "docs" / "facilitator.md"


def test_every_cited_check_exists():
    text = GUIDE.read_text(encoding="utf-8")
    cited = re.findall(r"`tests/(\w+\.py)(?:::(\w+))?`", text)
    assert cited, "the guide names the tests that check its fixes"
    for file, function in cited:
        source = (config.ROOT / "tests" / file).read_text(encoding="utf-8")
        assert not function or re.search(rf"^def {function}\(", source, re.M), (
            f"tests/{file}::{function}"
        )


def test_the_agenda_times_every_notebook():
    agenda = GUIDE.read_text(encoding="utf-8").split("## Agenda", 1)[1].split("\n## ", 1)[0]
    timed = set(
        re.findall(r"\b(\d\d): (?:\d+ / )?\d+ s", agenda)
    )  # cold / warm, or warm alone (footnoted)
    assert timed == {p.name[:2] for p in workbook.notebooks()}


# ---------------------------------------------------------------------------------------------
# README: a front door of at most 250 lines, its five-line answer agreeing with the answer page
# ---------------------------------------------------------------------------------------------

README = config.ROOT / "README.md"
ANSWER = config.ROOT / "docs" / "answer.md"
MAX_README_LINES = 250
FRONT = 40
"""The first lines of README hold the five-line answer and "Start here"."""


def readme_problems(text: str) -> list[str]:
    lines = text.splitlines()
    front = "\n".join(lines[:FRONT])
    problems = (
        [f"README has {len(lines)} lines, more than {MAX_README_LINES}"]
        if len(lines) > MAX_README_LINES
        else []
    )
    answer = [line for line in lines[:FRONT] if re.match(r"[1-5]\. \*\*", line)]
    if len(answer) != 5:
        problems.append(f"the first {FRONT} lines hold {len(answer)} numbered answer lines, not 5")
    if not re.search(r"^## Start here$", front, re.M):
        problems.append(f'no "## Start here" in the first {FRONT} lines')
    for reader, needs in {
        "learner": "make lab LAB_DIR=student",
        "facilitator": "(docs/facilitator.md)",
        "is my setup safe?": "make probe-store",
        "maintainer": "(docs/maintainers.md)",
    }.items():
        row = next((line for line in lines[:FRONT] if line.startswith("|") and reader in line), "")
        if needs not in row:
            problems.append(f"Start here: the {reader}'s row does not give {needs}")
    return problems


def unlinked_pages(text: str) -> list[str]:
    return [
        f"docs/{page.name}"
        for page in sorted((config.ROOT / "docs").glob("*.md"))
        if f"](docs/{page.name})" not in text
    ]


def test_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    assert readme_problems(text) == []
    assert unlinked_pages(text) == []


def test_a_long_readme_or_a_buried_answer_is_found():
    text = README.read_text(encoding="utf-8")
    assert readme_problems(text + "\nmore\n" * 200) == [
        f"README has {len(text.splitlines()) + 400} lines, more than 250"
    ]
    buried = "\n" * FRONT + text
    assert (
        len(readme_problems(buried)) == 6
    )  # five answer lines, Start here and its four rows gone: 1 + 1 + 4
    assert unlinked_pages(text.replace("](docs/torture.md)", "](docs/elsewhere.md)")) == [
        "docs/torture.md"
    ]


def answer_table(text: str) -> list[dict[str, str]]:
    """The answer page's table: one dict per row, keyed by the header's columns, each cell's
    verdict (its bold words) or its text."""
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    table = []
    for line in rows[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(header) or cells[0] == header[0]:
            break
        table.append(
            {
                h: (re.match(r"\*\*(.+?)\*\*", c).group(1) if c.startswith("**") else c)
                for h, c in zip(header, cells)
            }
        )
    return table


APPEND, DUM, COMPACT, RETRY = (
    "append ‖ append",
    "delete/update/merge ‖ append",
    "OPTIMIZE ‖ OPTIMIZE (Z-order too)",
    "retried append",
)
CLAIMS = (
    # (README's answer line, words it must say, the answer page's rows (engine, versions, a word of store + setting), column, verdict)
    (
        1,
        "deltalake 0.23.0 or later on S3 (conditional put, no lock)",
        [
            ("deltalake", "0.23.0–0.25.5", "conditional put"),
            ("deltalake", "1.0.0–1.1.4", "conditional put"),
            ("deltalake", "1.2.0–1.5.0", "conditional put"),
            ("deltalake", "1.5.1–1.6.3", "conditional put"),
            ("deltalake", "1.6.4–1.6.6", "conditional put"),
        ],
        APPEND,
        "safe",
    ),
    (1, "deltalake 1.6.6 on Azure", [("deltalake", "1.6.4–1.6.6", "Azure")], APPEND, "safe"),
    (1, "Delta Spark from one driver", [("Delta Spark", "4.4.0", "one driver")], APPEND, "safe"),
    (
        1,
        "Delta Spark with the DynamoDB log store from several",
        [("Delta Spark", "4.4.0", "S3DynamoDBLogStore")],
        APPEND,
        "safe",
    ),
    (
        1,
        "Delta Spark on a catalog-managed table",
        [("Delta Spark", "4.4.0", "catalog-managed")],
        APPEND,
        "safe",
    ),
    (
        2,
        "deltalake 0.22.3 or earlier and the unsafe rename",
        [("deltalake", "up to 0.22.3", "UNSAFE_RENAME")],
        APPEND,
        "loses data",
    ),
    (
        2,
        "Delta Spark's default S3 log store from several drivers",
        [("Delta Spark", "4.4.0", "several drivers")],
        APPEND,
        "loses data",
    ),
    (
        2,
        "two kinds of lock",
        [("deltalake + deltalake", "0.14.0 + 0.22.3", "own lock")],
        APPEND,
        "loses data",
    ),
    (
        2,
        "Delta Spark's DynamoDB log store beside deltalake 1.6.1 or later",
        [("Delta Spark + deltalake", "4.4.0 + 1.6.1–1.6.6", "DynamoDB")],
        APPEND,
        "loses data",
    ),
    (
        3,
        "the later job fails and commits nothing",
        [("deltalake", "1.6.4–1.6.6", "S3"), ("Delta Spark", "4.4.0", "S3DynamoDBLogStore")],
        DUM,
        "refused (retry)",
    ),
    (
        3,
        "deltalake 1.6.4 to 1.6.6 commit two OPTIMIZEs made from one snapshot",
        [("deltalake", "1.6.4–1.6.6", "S3")],
        COMPACT,
        "duplicates data",
    ),
    (
        4,
        "adds its rows again**, in every engine",
        "every row that keeps its appends",
        RETRY,
        "duplicates data",
    ),
)


def claim_problems(readme: str, table: list[dict[str, str]]) -> list[str]:
    lines = {int(m.group(1)): m.group(0) for m in re.finditer(r"^([1-5])\. \*\*.*$", readme, re.M)}
    problems = []
    for line, words, rows, column, verdict in CLAIMS:
        if words not in lines.get(line, ""):
            problems.append(f"README's answer line {line} no longer says {words!r}")
        if isinstance(
            rows, str
        ):  # every row whose commit protocol keeps appends, and whose cell is measured
            chosen = [
                row
                for row in table
                if row[APPEND] != "loses data"
                and row[column] != "not measured"
                and not row[column].startswith("not measured")
            ]
        else:
            chosen = []
            for engine, versions, word in rows:
                found = [
                    row
                    for row in table
                    if row["engine"] == engine
                    and row["versions"] == versions
                    and word in row["store"] + " " + row["setting"]
                ]
                if not found:
                    problems.append(f"the answer page has no row {engine}, {versions}, {word}")
                chosen += found
        problems += [
            f"README's answer line {line} says {verdict!r} for {row['engine']} {row['versions']} {row['store']} "
            f"({column}); the answer page says {row[column]!r}"
            for row in chosen
            if row[column] != verdict
        ]
    return problems


def test_the_five_line_answer_agrees_with_the_answer_page():
    assert (
        claim_problems(
            README.read_text(encoding="utf-8"), answer_table(ANSWER.read_text(encoding="utf-8"))
        )
        == []
    )


def test_a_five_line_answer_that_disagrees_is_found():
    readme, table = (
        README.read_text(encoding="utf-8"),
        answer_table(ANSWER.read_text(encoding="utf-8")),
    )
    assert table and all(APPEND in row for row in table)
    flipped = [
        {**row, COMPACT: "safe"} if row["versions"] == "1.6.4–1.6.6" else row for row in table
    ]
    assert claim_problems(readme, flipped) == [
        "README's answer line 3 says 'duplicates data' for deltalake 1.6.4–1.6.6 S3 "
        "(OPTIMIZE ‖ OPTIMIZE (Z-order too)); the answer page says 'safe'"
    ]
    assert claim_problems(readme.replace("Delta Spark from one driver", "Delta Spark"), table) == [
        "README's answer line 1 no longer says 'Delta Spark from one driver'"
    ]


# ---------------------------------------------------------------------------------------------
# Figures README and docs/torture.md quote, against the committed results they describe
# ---------------------------------------------------------------------------------------------

TORTURE = config.DATA_DIR / "full_runs" / "torture"


def _n(value) -> str:
    return f"{int(value):,}"


def torture_figures() -> dict[str, str]:
    """What the committed full torture run says, as the prose writes it."""
    import pandas as pd

    protocols = pd.read_csv(TORTURE / "protocols.csv.gz")
    operations = pd.read_csv(TORTURE / "operations.csv.gz")
    safe = protocols[protocols.safe]
    failed = operations[operations.outcome == "failed"]
    rs = ["s3-conditional-put", "s3-dynamodb-lock", "azure"]
    conflict = failed[
        (failed.kind == "append")
        & failed.error.fillna("").str.contains("deleted data this operation read")
    ]
    spark = failed[failed.protocol == "spark-dynamodb"]
    return {
        "README: safe protocols' acknowledged operations lost": f"lost {_n(safe.lost.sum())} of {_n(safe.acknowledged.sum())} acknowledged operations",
        "README: writer processes killed": f"while {_n(safe.kills.sum())} writer processes were killed",
        "torture.md: appends refused by a concurrent delete": ", ".join(
            _n((conflict.protocol == p).sum()) for p in rs[:2]
        )
        + f" and {_n((conflict.protocol == rs[2]).sum())} of the 2,200",
        "torture.md: CommitFailedErrors": ", ".join(
            _n(((failed.protocol == p) & (failed.error_class == "CommitFailedError")).sum())
            for p in rs[:2]
        )
        + f" and {_n(((failed.protocol == rs[2]) & (failed.error_class == 'CommitFailedError')).sum())} `CommitFailedError`s",
        "torture.md: Spark's failed deletes": f"were {_n((spark.error_class == 'ConcurrentAppendException').sum())} deletes",
        "torture.md: Spark's failed OPTIMIZEs": f"and {_n((spark.error_class == 'ConcurrentDeleteReadException').sum())} OPTIMIZEs",
    }


def torture_table_rows() -> list[str]:
    """docs/torture.md's table of the full run, its figures as the committed run gives them."""
    import pandas as pd

    p = pd.read_csv(TORTURE / "protocols.csv.gz")
    return [
        f"| {_n(r.operations)} | {_n(r.acknowledged)} / {_n(r.failed)} / {_n(r.killed_in_flight)} | "
        for r in p.itertuples()
    ] + [f"| **{_n(r.versions)}** |" if r.safe else f"| {_n(r.versions)} |" for r in p.itertuples()]


def figure_problems(readme: str, torture: str) -> list[str]:
    texts = {
        "README": " ".join(readme.split()),
        "torture.md": " ".join(torture.split()),
    }  # prose wraps anywhere
    problems = [
        f"{what}: {expected!r} not found"
        for what, expected in torture_figures().items()
        if expected not in texts[what.split(":")[0]]
    ]
    problems += [
        f"torture.md's table: {row!r} not found"
        for row in torture_table_rows()
        if row not in torture
    ]
    return problems


def test_the_figures_quoted_come_from_the_committed_runs():
    assert (
        figure_problems(
            README.read_text(encoding="utf-8"),
            (config.ROOT / "docs" / "torture.md").read_text(encoding="utf-8"),
        )
        == []
    )


def test_a_figure_that_drifted_is_found():
    readme, torture = (
        README.read_text(encoding="utf-8"),
        (config.ROOT / "docs" / "torture.md").read_text(encoding="utf-8"),
    )
    assert figure_problems(readme.replace("lost 0 of 5,389", "lost 0 of 5,390"), torture) == [
        "README: safe protocols' acknowledged operations lost: 'lost 0 of 5,389 acknowledged operations' not found"
    ]
    assert figure_problems(
        readme, torture.replace("| 1,486 / 698 / 16 |", "| 1,486 / 697 / 16 |")
    ) == ["torture.md's table: '| 2,200 | 1,486 / 698 / 16 | ' not found"]


def readme_cost_problems(readme: str) -> list[str]:
    """Each figure a README line quotes (GB, MB, s, tests) appears in the docs page that line links."""
    problems = []
    for line in readme.splitlines():
        figures = re.findall(r"\b\d[\d,.]* (?:GB|MB|s|tests)\b", line)
        pages = re.findall(r"\]\((docs/[\w-]+\.md)\)", line)
        if not figures or not pages:
            continue
        held = " ".join((config.ROOT / page).read_text(encoding="utf-8") for page in pages)
        problems += [
            f"README quotes {figure!r}, which {', '.join(pages)} does not"
            for figure in figures
            if figure not in held
        ]
    return problems


def test_the_costs_readme_quotes_are_the_measured_ones():
    assert readme_cost_problems(README.read_text(encoding="utf-8")) == []
    assert readme_cost_problems(
        "- `make test`: 999 tests in 587 s ([docs/testing.md](docs/testing.md))."
    ) == ["README quotes '999 tests', which docs/testing.md does not"]
