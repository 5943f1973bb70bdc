"""A commit whose answer is lost: the store applies the commit request, the connection drops
before the answer reaches the writer, and what each engine then does, judged from storage, on
every commit path of the answer page, with and without each engine's remedy.

* :mod:`.gate`: the proxy that drops the answer to one accepted commit request per table;
* :mod:`.trials`: one trial's record, its outcome read from storage, the committed CSV;
* :mod:`.deltalake_paths` and :mod:`.deltalake_worker`: deltalake's paths (conditional put on S3
  and Azure, the DynamoDB lock), each era in its own Python;
* :mod:`.spark_paths` and :mod:`.spark_worker`: Delta Spark's (the default S3 log store, the
  S3DynamoDBLogStore's claim and its S3 write);
* :mod:`.catalog_path`: Delta Spark through a Unity Catalog server;
* :mod:`.run` (``python -m helpers.lost_answer``): all of them, into ``build/lost_answer/<name>/``.

Imports: the lab's long runs' layer (catalog, matrix, producers) and every layer below it.
"""
