"""helpers.delta.delta_log: the one home of the commit-file name pattern."""

import pytest

from helpers.delta import delta_log


def test_commit_files_are_named_by_version_in_twenty_digits():
    assert delta_log.commit_file_name(3) == "00000000000000000003.json"
    assert delta_log.commit_file(12) == "_delta_log/00000000000000000012.json"


@pytest.mark.parametrize(
    "path, version",
    [
        ("_delta_log/00000000000000000003.json", 3),
        ("delta-root/t/_delta_log/00000000000000000042.json", 42),
        ("/delta-root/t/_delta_log/00000000000000000000.json", 0),
        ("_delta_log/00000000000000000003.checkpoint.parquet", None),
        ("_delta_log/.tmp/00000000000000000003.json.5f0c", None),
        ("_delta_log/_commit_1f2e.json.tmp", None),
        ("t/_delta_log_x/00000000000000000003.json", None),
        ("_delta_log/0003.json", None),
        ("part-00000-1f2e.snappy.parquet", None),
    ],
)
def test_commit_version_reads_only_commit_files(path, version):
    assert delta_log.commit_version(path) == version


def test_a_commit_file_is_read_into_its_info_adds_and_removes():
    body = (
        b'{"commitInfo": {"operation": "OPTIMIZE"}}\n\n'
        b'{"add": {"path": "b.parquet", "stats": "{\\"numRecords\\": 20}"}}\n'
        b'{"remove": {"path": "a.parquet"}}\n{"protocol": {"minReaderVersion": 1}}\n'
    )
    info, added, removed = delta_log.read_commit(body)
    assert info == {"operation": "OPTIMIZE"}
    assert [a["path"] for a in added] == ["b.parquet"] and [r["path"] for r in removed] == [
        "a.parquet"
    ]
    assert (
        delta_log.add_stats(added[0]) == {"numRecords": 20}
        and delta_log.add_stats({"path": "c"}) == {}
    )


def test_commit_files_are_read_oldest_first_and_data_files_told_apart():
    class Store:
        files = {
            "_delta_log/00000000000000000001.json": b"one",
            "_delta_log/00000000000000000000.json": b"zero",
            "_delta_log/00000000000000000001.checkpoint.parquet": b"cp",
            "part-0.parquet": b"data",
        }

        def list(self):
            return list(self.files)

        def read(self, name):
            return self.files[name]

    assert delta_log.commit_files(Store()) == [(0, b"zero"), (1, b"one")]
    assert delta_log.commit_files(Store(), ["_delta_log/00000000000000000001.json"]) == [
        (1, b"one")
    ]
    assert [n for n in Store.files if delta_log.is_data_file(n)] == ["part-0.parquet"]
