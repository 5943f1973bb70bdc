"""helpers.ground.eras: one isolated environment per delta-rs era, started by name."""

import re

import pytest

from helpers.ground import config, eras
from helpers.machine import environment


def test_each_era_pins_its_deltalake_in_its_lock_file():
    for era in eras.ALL_ERAS.values():
        assert era.requirements.is_file(), f"{era.requirements} is missing: run `make lock`"
        assert environment.pinned_version("deltalake", era.requirements) == era.deltalake_version


def test_makefile_installs_exactly_the_writer_eras():
    makefile = (config.ROOT / "Makefile").read_text()
    declared = re.search(r"^WRITER_ERAS := (.*)$", makefile, re.M).group(1).split()
    assert declared == [e.name for e in eras.ALL_ERAS.values() if not e.in_kernel]


@pytest.mark.parametrize("name", list(eras.ALL_ERAS))
def test_each_era_imports_its_own_deltalake(name):
    assert eras.installed_deltalake_version(name) == eras.ALL_ERAS[name].deltalake_version


def test_the_timeline_of_eras_keeps_its_three_and_the_lock_shape_era_stands_apart():
    assert list(eras.ERAS) == ["deltalake-0.22.3", "deltalake-1.5.1", "deltalake-1.6.6"]
    assert list(eras.LOCK_SHAPE_ERAS) == [eras.OLD_LOCK] == ["deltalake-0.14.0"]
    assert eras.era(eras.OLD_LOCK).deltalake_version == "0.14.0"
    assert eras.era(eras.OLD_LOCK).requirements.name == "writer-deltalake-0.14.0.txt"
    assert (
        list(eras.CONFLICT_MATRIX_ERAS)
        == [
            eras.LAST_REFUSING_DOUBLE_OPTIMIZE,
            eras.LAST_COMMITTING_BLIND_APPEND,
            eras.LAST_BEFORE_1_0,
            eras.LAST_VACUUM_FULL_WITHIN_RETENTION,
        ]
        == ["deltalake-1.6.3", "deltalake-1.1.4", "deltalake-0.25.5", "deltalake-1.5.0"]
    )
    assert not any(era.timeline for era in eras.CONFLICT_MATRIX_ERAS.values())
    assert eras.ALL_ERAS == {**eras.ERAS, **eras.LOCK_SHAPE_ERAS, **eras.CONFLICT_MATRIX_ERAS}


def test_eras_are_isolated_from_the_kernel():
    done = eras.run_in_era(
        eras.SEEDS, ["-c", "import importlib.util as u; print(u.find_spec('pyspark') is None)"]
    )
    assert done.stdout.strip() == "True", "the seeds' era must not see the kernel's packages"


def test_unknown_era_lists_the_known_ones():
    with pytest.raises(eras.EraError, match="deltalake-0.22.3.*deltalake-0.14.0") as error:
        eras.era("deltalake-0.6.0")
    assert "Unknown era 'deltalake-0.6.0'" in str(error.value)


def test_missing_environment_says_make_install(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "ENVS_DIR", tmp_path)
    with pytest.raises(eras.EraError, match="make install"):
        eras.python_for(eras.SEEDS)
