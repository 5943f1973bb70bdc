"""Shared fixtures: the emulators (started if they do not answer) and unique table names."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture(scope="session")
def stores():
    """S3 (versioned bucket), DynamoDB (lock table) and Azure Blob (container), ready to use."""
    from helpers import services, storage

    services.require("s3", "dynamodb", "azure")
    storage.ensure_bucket()
    storage.ensure_lock_table()
    storage.ensure_container()


@pytest.fixture
def table_name(request) -> str:
    """A table name no earlier run used: the test's name plus a uuid."""
    return f"test-{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}".lower()
