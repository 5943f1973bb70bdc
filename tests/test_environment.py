"""One source of truth: pyproject.toml -> requirements/*.txt (locks) -> what is installed."""

import json
import re
import tomllib

from helpers.ground import config
from helpers.machine import environment

PYPROJECT = tomllib.loads((config.ROOT / "pyproject.toml").read_text())


def _exact_pins(group):
    pins = {}
    for requirement in PYPROJECT["dependency-groups"][group]:
        match = re.match(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==(\S+)$", requirement)
        if match:
            pins[match.group(1)] = match.group(2)
    return pins


def _lock_file(group):
    """``writer-deltalake-0-22-3`` -> requirements/writer-deltalake-0.22.3.txt (what `make lock` writes)."""
    return (
        config.ROOT
        / "requirements"
        / (re.sub(r"-(\d+)-(\d+)-(\d+)$", r"-\1.\2.\3", group) + ".txt")
    )


def test_every_exact_pin_in_pyproject_is_what_the_lock_file_holds():
    for group in PYPROJECT["dependency-groups"]:
        lock = _lock_file(group)
        assert lock.is_file(), f"{group}: {lock.name} missing; run `make lock`"
        for package, version in _exact_pins(group).items():
            assert environment.pinned_version(package, lock) == version, (
                f"{group}: {package} drifted; run `make lock`"
            )


def test_lock_files_carry_hashes_for_every_package():
    for lock in (config.ROOT / "requirements").glob("*.txt"):
        text = lock.read_text()
        packages = re.findall(r"^[A-Za-z0-9_.\-]+==", text, re.M)
        assert packages and len(packages) <= text.count("--hash=sha256:"), lock.name


def test_kernel_has_what_the_lock_pins():
    drift = [row for row in environment.package_report() if not row["ok"]]
    assert drift == [], (
        f"installed packages differ from requirements/kernel.txt: {drift}; run `make install`"
    )


def test_emulator_versions_agree_everywhere():
    package = json.loads((config.ROOT / "package.json").read_text())
    lock = json.loads((config.ROOT / "package-lock.json").read_text())
    assert package["dependencies"]["azurite"] == config.AZURITE_VERSION
    assert lock["packages"]["node_modules/azurite"]["version"] == config.AZURITE_VERSION
    assert environment.pinned_version("moto") == config.MOTO_VERSION
