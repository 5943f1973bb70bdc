"""moto's own answers with less work: patches of moto functions that give the same results.

moto works out some answers from scratch for every request, in ways whose cost grows with
everything the server holds. These patches keep moto's functions and results and only give them
less to go through. ``helpers/stores/moto_server.py`` applies them before it serves; each patch returns
the names it patched, and tests/test_moto_server.py holds that each still applies to the pinned
moto and answers as moto's own function does. Like moto_server.py, this file imports only the
standard library and moto, so docker-compose.yml mounts it beside moto_server.py in moto's image.
"""

from __future__ import annotations

import inspect


def remember_pure_lookups() -> list[str]:
    """Make moto remember two answers it works out again for every request, both functions of
    their arguments alone. Measured with moto 5.2.5 on 2 cores, the server's CPU time for 750
    PUTs and then 200 listings of 100 keys went from 3.8 and 7.7 s to 2.5 and 3.7 s:

    * which backend serves a host name: moto lists its package folder (``os.listdir`` and one
      ``isdir`` per entry) and tries its URL patterns, under the one lock every request takes;
    * an object's modification time as text: moto parses and formats it again for every key of
      every listing, and a Delta log is listed after every conflict.

    Returns what it patched (a test holds that both still apply to the pinned moto)."""
    from moto.core.serialize import TimestampSerializer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    patched = []
    backend_for_host = DomainDispatcherApplication.get_backend_for_host
    if not getattr(backend_for_host, "remembered", False):
        hosts: dict = {}

        def get_backend_for_host(self, host):
            if host not in hosts:
                hosts[host] = backend_for_host(self, host)
            return hosts[host]

        get_backend_for_host.remembered, get_backend_for_host.original = True, backend_for_host
        DomainDispatcherApplication.get_backend_for_host = get_backend_for_host
    patched.append("DomainDispatcherApplication.get_backend_for_host")
    to_text = TimestampSerializer._convert_timestamp_to_str
    if not getattr(to_text, "remembered", False):
        texts: dict = {}

        def _convert_timestamp_to_str(self, value, timestamp_format):
            try:
                key = (value, timestamp_format)
                hash(key)
            except TypeError:
                return to_text(self, value, timestamp_format)
            if key not in texts:
                if len(texts) > 200_000:  # bounded: every object version has its own time
                    texts.clear()
                texts[key] = to_text(self, value, timestamp_format)
            return texts[key]

        _convert_timestamp_to_str.remembered, _convert_timestamp_to_str.original = True, to_text
        TimestampSerializer._convert_timestamp_to_str = _convert_timestamp_to_str
    patched.append("TimestampSerializer._convert_timestamp_to_str")
    return patched


class _Narrowed:
    """A bucket as moto's listings see it: only the keys under ``prefix`` (taken in one step, so
    a write during the listing cannot change the dict under it, as moto's own copy ensures)."""

    def __init__(self, bucket, prefix: str) -> None:
        keys = bucket.keys
        # the names only: a list of strings that exist already allocates no object per key
        self._lists = [
            (name, dict.get(keys, name, ()))
            for name in list(dict.keys(keys))
            if name.startswith(prefix)
        ]

    @property
    def keys(self):
        return self

    def items(self):
        return ((name, versions[-1]) for name, versions in self._lists if versions)

    def iterlists(self):
        return iter(self._lists)


class _OneBucket:
    """moto's S3 backend for one call, with ``get_bucket`` answering a narrowed bucket."""

    def __init__(self, backend, narrowed: _Narrowed) -> None:
        self._backend, self._narrowed = backend, narrowed

    def get_bucket(self, bucket_name: str):
        return self._narrowed

    def __getattr__(self, name: str):
        return getattr(self._backend, name)


class _OnePartition:
    """A DynamoDB table as moto's ``Query`` sees it: ``all_items`` answers one partition's items."""

    def __init__(self, table, hash_key) -> None:
        self._table, self._hash_key = table, hash_key

    def all_items(self) -> list:
        found = self._table.items.get(
            self._hash_key
        )  # .get: the table's defaultdict must not grow a key
        if found is None:
            return []
        return list(found.values()) if self._table.range_key_attr else [found]

    def __getattr__(self, name: str):
        return getattr(self._table, name)


def look_only_where_asked() -> list[str]:
    """Make moto's S3 listings look only at the keys under the prefix asked for, and its DynamoDB
    ``Query`` only at the partition asked for. For every request, moto goes through every key of
    the bucket (``ListObjectVersions`` deep-copies every version of every key first, then drops
    those outside the prefix), and every item of the table, sorted. So each costs as much as the
    whole bucket or table holds, and the workbook fills both with hundreds of tables: every commit
    through a DynamoDB log store queries the lock table, every audit lists a log's versions.
    Measured with moto 5.2.5 on 2 cores, in server CPU-seconds:

    * one ``ListObjectVersions`` of a 30-key prefix: 0.02 with nothing else in the bucket, 0.86
      with 5,000 other keys and 3.4 with 20,000; narrowed, 0.02 with either;
    * one ``Query`` of a 50-item partition: 0.05 with 100 items in the table, 0.10 with 2,000 and
      0.26 with 8,000; narrowed, 0.03 to 0.04.

    The answers stay moto's own: the same functions run, over the keys or items they would keep.
    Left to moto unchanged: a listing without a prefix, a ``ListObjectVersions`` page after the
    first (moto's ``KeyMarker`` handling looks at keys outside the prefix), table buckets, queries of
    an index and scans. Returns what it patched (a test compares the answers with moto's own)."""
    from moto.dynamodb.models.table import Table
    from moto.s3.models import FakeBucket, S3Backend

    patched = []
    versions = S3Backend.list_object_versions
    if not getattr(versions, "narrowed", False):

        def list_object_versions(
            self,
            bucket_name,
            delimiter=None,
            key_marker=None,
            max_keys=1000,
            prefix="",
            version_id_marker=None,
        ):
            bucket = self.get_bucket(bucket_name)
            if not prefix or key_marker is not None or type(bucket) is not FakeBucket:
                return versions(
                    self, bucket_name, delimiter, key_marker, max_keys, prefix, version_id_marker
                )
            return versions(
                _OneBucket(self, _Narrowed(bucket, prefix)),
                bucket_name,
                delimiter,
                key_marker,
                max_keys,
                prefix,
                version_id_marker,
            )

        list_object_versions.narrowed, list_object_versions.original = True, versions
        S3Backend.list_object_versions = list_object_versions
    patched.append("S3Backend.list_object_versions")
    objects = S3Backend.list_objects
    if not getattr(objects, "narrowed", False):

        def list_objects(self, bucket, prefix, delimiter, marker, max_keys):
            if not prefix or type(bucket) is not FakeBucket:
                return objects(self, bucket, prefix, delimiter, marker, max_keys)
            return objects(self, _Narrowed(bucket, prefix), prefix, delimiter, marker, max_keys)

        list_objects.narrowed, list_objects.original = True, objects
        S3Backend.list_objects = list_objects
    patched.append("S3Backend.list_objects")
    query = Table.query
    if not getattr(query, "narrowed", False):
        signature = inspect.signature(query)  # moto passes index_name by position

        def table_query(self, *args, **kwargs):
            asked = signature.bind(self, *args, **kwargs).arguments
            if asked.get("index_name") is not None or asked.get("hash_key") is None:
                return query(self, *args, **kwargs)
            return query(_OnePartition(self, asked["hash_key"]), *args, **kwargs)

        table_query.narrowed, table_query.original = True, query
        Table.query = table_query
    patched.append("Table.query")
    return patched
