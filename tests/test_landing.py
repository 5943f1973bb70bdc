"""The landing data: deterministic batches, the shipped files, and what a bad file or batch gives."""

from __future__ import annotations

import pytest

from helpers.delta import landing
from helpers.ground import config


def test_shipped_landing_files_are_what_the_generator_makes(tmp_path):
    for batch in range(1, 9):
        shipped = config.DATA_DIR / "landing" / landing.landing_file_name(batch)
        assert shipped.read_bytes() == landing.write_landing_file(batch, tmp_path).read_bytes(), (
            shipped.name
        )


@pytest.mark.parametrize("batch", [1, 2, 9, 10])
def test_landing_file_loads_with_the_batch_ids(batch, tmp_path):
    path = landing.write_landing_file(batch, tmp_path)
    table = landing.read_landing_file(path)
    assert table.schema.names == ["id", "name"]
    assert str(table.schema.field("id").type) == "int32"
    assert table.column("id").to_pylist() == list(range(batch * 100 + 1, batch * 100 + 11))
    assert all(name and " " in name for name in table.column("name").to_pylist())
    assert {landing.batch_of_id(i) for i in table.column("id").to_pylist()} == {batch}


def test_batch_returns_the_table_of_its_landing_file():
    assert landing.batch(3).equals(landing.read_landing_file(landing.landing_file(3)))
    assert landing.batch(3).column("id").to_pylist() == list(landing.batch_ids(3))


def test_batches_beyond_the_shipped_files_are_generated(tmp_path):
    path = landing.landing_file(12, generated_dir=tmp_path)
    assert path.parent == tmp_path
    assert landing.read_landing_file(path).column("id").to_pylist() == list(range(1201, 1211))
    assert landing.landing_file(3).parent == landing.SHIPPED_DIR


def test_landing_formats_alternate():
    assert [landing.landing_format(b) for b in (1, 2, 3, 4)] == ["jsonl", "csv", "jsonl", "csv"]


@pytest.mark.parametrize("bad", [0, -3, "2", 2.0, True, landing.MAX_BATCH + 1])
def test_bad_batch_numbers_are_refused(bad):
    with pytest.raises(landing.LandingError, match="batch must be"):
        landing.batch_ids(bad)


def test_landing_file_that_does_not_fit_the_schema(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\nnot-a-number,Ann\n")
    with pytest.raises(landing.LandingError, match="does not fit the schema"):
        landing.read_landing_file(bad)
    with pytest.raises(landing.LandingError, match="neither .jsonl nor .csv"):
        (tmp_path / "x.parquet").write_text("")
        landing.read_landing_file(tmp_path / "x.parquet")
