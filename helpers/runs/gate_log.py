"""What the commit gate logs (:mod:`helpers.runs.commitgate`): one record per HEAD or PUT of a
commit file (:class:`CommitRequest`), one per write to a DynamoDB lock item (:class:`LockRequest`,
read from the request by :func:`parse_lock_request`), and the client each came from, named from
its ``User-Agent``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from helpers.delta import delta_log


@dataclass
class CommitRequest:
    """One request for a commit file, as the gate saw it."""

    t_arrived: float
    method: str
    key: str
    version: int
    client: str
    conditional: bool
    copy: bool
    held_s: float = 0.0
    released_as: int | None = None
    """Position in its group's release order (1 = first to reach the store), None if not held."""
    released_by: str | None = None
    """Why its group was let go: ``together`` (all had arrived), ``max_wait_s`` (the first had
    waited that long) or ``open`` (the gate was disarmed); None if not held."""
    status: int | None = None


@dataclass
class LockRequest:
    """One write to a DynamoDB lock item, as the gate saw it."""

    operation: str
    """``PutItem`` (a claim of a commit version), ``UpdateItem`` (marking it complete) or ``DeleteItem``."""
    lock_table: str
    table_path: str
    file_name: str
    temp_path: str | None
    conditional: bool
    client: str
    status: int | None = None
    error: str | None = None
    """DynamoDB's error type when it refused (e.g. ``ConditionalCheckFailedException``)."""

    @property
    def version(self) -> int | None:
        return delta_log.commit_version(delta_log.LOG_DIR + self.file_name)


LOCK_OPERATIONS = ("PutItem", "UpdateItem", "DeleteItem")


def parse_lock_request(target: str, body: bytes | None, client: str) -> LockRequest | None:
    """The lock-item write a DynamoDB request makes (``X-Amz-Target`` and JSON body), or None for
    any other request (reads, table management, a body that is not a lock item)."""
    operation = target.rsplit(".", 1)[-1]
    if not target.startswith("DynamoDB_") or operation not in LOCK_OPERATIONS or not body:
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None
    item = request.get("Item") if operation == "PutItem" else request.get("Key")
    if not isinstance(item, dict) or "tablePath" not in item or "fileName" not in item:
        return None

    def text(attribute: dict | None) -> str | None:
        return attribute.get("S") if isinstance(attribute, dict) else None

    return LockRequest(
        operation=operation,
        lock_table=str(request.get("TableName", "")),
        table_path=text(item["tablePath"]) or "",
        file_name=text(item["fileName"]) or "",
        temp_path=text(item.get("tempPath")),
        conditional=bool(request.get("ConditionExpression") or request.get("Expected")),
        client=client,
    )


def client_of(user_agent: str) -> str:
    """The client a request came from, by its ``User-Agent``: ``spark (S3A)``, ``delta-rs``,
    ``boto3``, or the agent's first word."""
    agent = user_agent.lower()
    if "hadoop" in agent or "aws-sdk-java" in agent:
        return "spark (S3A)"
    if "object_store" in agent or "delta-rs" in agent or "aws-sdk-rust" in agent:
        return "delta-rs"
    if "boto" in agent:
        return "boto3"
    return user_agent.split(" ", 1)[0] or "unknown"
