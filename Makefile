# The workbook's commands. `make help` lists them; README.md explains them.
#
# Everything is installed inside this folder: .venv/ (the notebook kernel), .envs/<era>/ (one
# environment per delta-rs writer era), node_modules/ (Azurite), and every download is cached in
# .cache/ (wheels, npm packages, Spark jars) so the second run needs no network.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3.11
UV_VERSION := 0.13.8
SPARK_ERA_STAMP := .envs/delta-spark-3.3.2/.installed
WRITER_ERAS := deltalake-0.22.3 deltalake-1.5.1 deltalake-0.14.0 deltalake-1.6.3 deltalake-1.1.4 deltalake-0.25.5 deltalake-1.5.0

CACHE := $(CURDIR)/.cache
export UV_CACHE_DIR := $(CACHE)/uv
export UV_PYTHON_DOWNLOADS := never
export PIP_CACHE_DIR := $(CACHE)/pip
export npm_config_cache := $(CACHE)/npm
export npm_config_update_notifier := false
export npm_config_fund := false
export npm_config_audit := false
# Nothing leaves the machine but downloads: Daft's usage telemetry off for everything a target
# starts (the same variables as helpers/ground/config.py NO_TELEMETRY; tests/test_privacy.py checks both)
export DO_NOT_TRACK := 1
export DAFT_ANALYTICS_ENABLED := 0
export SCARF_NO_ANALYTICS := true
ifdef OFFLINE
export UV_OFFLINE := 1
export npm_config_offline := true
endif

UV := $(CACHE)/bootstrap/bin/uv
# After building a source distribution (pyspark has no wheel), uv keeps its unpacked source
# (944 MB for pyspark 4.2.0) and the built wheel (430 MB) beside the unpacked wheel it installs
# from. Reinstalling, offline too, needs only the unpacked wheel: the other two are deleted.
# Environments are compiled to bytecode at install (about 300 MB): the writers run with
# PYTHONDONTWRITEBYTECODE=1 (helpers/writers/processes.py), as do machines that set it, and without
# compiled files every writer process would compile deltalake's and pyarrow's modules again.
PRUNE_SDIST_BUILDS = rm -rf $(UV_CACHE_DIR)/sdists-v*/*/*/*/*/src $(UV_CACHE_DIR)/sdists-v*/*/*/*/*/*.whl
PY := $(CURDIR)/.venv/bin/python
ERA_STAMPS := $(WRITER_ERAS:%=.envs/%/.installed)
NBGRADER_SERVER_EXTENSIONS := formgrader validate_assignment assignment_list course_list
KERNEL_SPEC := .venv/share/jupyter/kernels/delta-lake-workbook/kernel.json

.PHONY: spark-era help answer install install-python preflight .preflight-problems lock format workbook test test-heavy bench bench-servers torture torture-spark matrix audit outputs lab lab-check student cluster cluster-stop cluster-check services stop status reset prefetch versitygw uc-server s3-on-versitygw probe-store probe-versitygw producers deltalake-fix lost-answer catalog-run publish clean distclean

help: ## list the commands
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

preflight: ## check Python 3.11, Java 17+ and Node.js 20+ before installing anything (and note what is optional and missing)
	@$(PYTHON) -m helpers.machine.preflight

# What every command checks first: the problems only; the notes are `make preflight`'s, said once
.preflight-problems:
	@$(PYTHON) -m helpers.machine.preflight --problems-only

install: .preflight-problems install-python node_modules/.installed ## install everything the workbook needs (idempotent)

install-python: .venv/.installed $(KERNEL_SPEC) $(ERA_STAMPS) .cache/ivy/.resolved ## the Python environments and Spark jars only (the Docker image)

$(UV):
	$(PYTHON) -m venv $(CACHE)/bootstrap
	$(CACHE)/bootstrap/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

.venv/.installed: requirements/kernel.txt pyproject.toml | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) .venv
	$(UV) pip sync --quiet --compile-bytecode --python .venv/bin/python --require-hashes requirements/kernel.txt
	$(PRUNE_SDIST_BUILDS)
	$(UV) pip install --quiet --python .venv/bin/python --no-deps --editable .
	@# nbgrader is here for `make student`; learners get JupyterLab without its course-management panels
	.venv/bin/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1
	.venv/bin/jupyter server extension disable --sys-prefix $(NBGRADER_SERVER_EXTENSIONS:%=nbgrader.server_extensions.%) >/dev/null 2>&1
	touch $@

$(KERNEL_SPEC): .venv/.installed helpers/jupyter/workbook.py helpers/ground/config.py
	$(PY) -m helpers.jupyter.workbook kernel

.envs/%/.installed: requirements/writer-%.txt | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) .envs/$*
	$(UV) pip sync --quiet --compile-bytecode --python .envs/$*/bin/python --require-hashes $<
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --prefer-offline --no-progress --loglevel=error
	touch $@

# Delta Spark 3.3.2 on Spark 3.5 (helpers/ground/eras.py SPARK_ERAS): its environment, then its jars
# fetched and the workbook's log store compiled against them, by the era's own Python
$(SPARK_ERA_STAMP): requirements/spark-delta-3.3.2.txt .cache/ivy/.resolved | $(UV)
	$(UV) venv --quiet --allow-existing --python $(PYTHON) .envs/delta-spark-3.3.2
	$(UV) pip sync --quiet --compile-bytecode --python .envs/delta-spark-3.3.2/bin/python --require-hashes $<
	$(PRUNE_SDIST_BUILDS)
	PYTHONPATH=$(CURDIR) .envs/delta-spark-3.3.2/bin/python -m helpers.spark.install fetch-jars
	touch $@

.cache/ivy/.resolved: helpers/spark/sessions.py helpers/spark/spark_start.py helpers/spark/install.py helpers/spark/java_build.py helpers/ground/config.py $(wildcard helpers/spark/java/*/*/*.java) .venv/.installed
	$(PY) -m helpers.spark.install fetch-jars
	touch $@

lock: | $(UV) ## re-resolve pyproject.toml into requirements/*.txt (then commit them)
	$(UV) pip compile pyproject.toml --group kernel --universal --python-version 3.11 --generate-hashes --no-header --quiet -o requirements/kernel.txt
	$(foreach era,$(WRITER_ERAS),$(UV) pip compile pyproject.toml --group writer-$(subst .,-,$(era)) --universal --python-version 3.11 --generate-hashes --no-header --quiet -o requirements/writer-$(era).txt;)
	$(UV) pip compile pyproject.toml --group spark-delta-3-3-2 --universal --python-version 3.11 --generate-hashes --no-header --quiet -o requirements/spark-delta-3.3.2.txt
	npm install --package-lock-only --no-progress --loglevel=error

format: install-python ## format helpers/, tests/ and the notebooks' code with ruff, and wrap the notebooks' markdown (line length 100; make test checks both)
	.venv/bin/ruff format helpers tests notebooks
	$(PY) -m helpers.jupyter.markdown_wrap

workbook: install ## execute every notebook into build/executed/ (HTML + index.html; NB=03 for one)
	$(PY) -m helpers.stores.services run -- $(PY) -m helpers.jupyter.workbook run $(NB)

TEST_WORKERS ?= 3

test: ## unit tests and every notebook executed as a test (notebook 15 needs the Unity Catalog server: built with Rust in the background, beside the installs and the tests), on three workers (TEST_WORKERS=1: one); each test's time in build/test-times.xml
	@$(MAKE) --no-print-directory .preflight-problems
	@# on a cold machine the server's build takes minutes of cargo: it runs in the background, beside
	@# the installs and the tests, and only notebook 15 and the catalog's tests wait for it
	@# (helpers/catalog/server_build.py ready); its log: .cache/uc/build.log
	@$(PYTHON) -m helpers.catalog.server_build build --background $(if $(OFFLINE),--offline)
	@$(MAKE) --no-print-directory --jobs=4 --output-sync=target install
	$(PY) -m helpers.stores.services run -- $(PY) -m pytest -m "not heavy" --junitxml=build/test-times.xml $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)
	@$(PYTHON) -m helpers.catalog.server_build build $(if $(OFFLINE),--offline)

test-heavy: install uc-server spark-era ## the tests make test leaves out for its time (tests/conftest.py HEAVY: the findings' reproducers, notebook 09's several drivers with Delta Spark 3.3.2, Spark's DynamoDB log store states, the key check of the catalog's drivers on Azurite and S3, Spark writer processes, the mixed pair, the benchmark's Spark driver, a lost commit answer on every path of deltalake, Delta Spark and the catalog; the catalog's job refusing the testing flag, a short outage, the Kernel race twice, a small cost run and its upkeep; CI runs it after make test, and prints its time)
	$(PY) -m helpers.stores.services run -- $(PY) -m pytest -m heavy --junitxml=build/test-heavy-times.xml $(if $(filter-out 1,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

bench: install ## the commit-throughput benchmark, every protocol and writer count (9 to 18 min; results in build/bench/full/ only: make publish RUN=build/bench/full makes them the committed run)
	$(PY) -m helpers.stores.services run -- $(PY) -m helpers.bench --name full $(BENCH_ARGS)

producers: versitygw ## many producers through one committer: 1, 2, 4 and 8 producers beside the serial limit and 8 racing writers, on local disk, Azurite, moto and versitygw in one run, with 100 commits profiled step by step, their cost against the queue's length and the committer alone on staged files, 300 commits in each way of keeping its refresh short (helpers/producers/serial_limit.py; the fix's when make deltalake-fix built it) (47 min on a 2-core machine on 2026-12-07; PRODUCERS_ARGS=--no-variants measures only the committer as it runs, --no-profile leaves the profile and the queue out); needs Go for versitygw, as bench-servers; results in build/producers/full/ only: make publish RUN=build/producers/full makes them the committed run
	WORKBOOK_S3_SERVER=versitygw $(PY) -m helpers.stores.services run -- $(PY) -m helpers.producers --name full --s3-servers moto,versitygw $(PRODUCERS_ARGS)

deltalake-fix: install ## for maintainers: build deltalake 1.6.6 from its source distribution with the proposed fix of create_write_transaction (helpers/producers/patches/), with the machine's Rust 1.94+, into .cache/deltalake-fix/ (an hour or more on two cores the first time; the workbook's own environment keeps the released 1.6.6); make producers then measures the committer on it too
	$(PY) -m helpers.producers.deltalake_fix

torture-spark: install ## the Spark protocol's bounded torture run, which notebook 12 leaves out: 2 drivers x 4 writer threads, 96 operations, 4 kills, at least 50 commits (about 3 min; CI runs it; results in build/torture/spark-subset/)
	$(PY) -m helpers.torture --name spark-subset --protocols spark-dynamodb --per-writer 12 --kills 4 --min-commits 50

torture: install ## the torture run: each safe protocol takes enough operations from 8 writers for 1,000 commits, 16 writers killed mid-commit, services restarted (results in build/torture/full/ only: make publish RUN=build/torture/full makes them the committed run)
	$(PY) -m helpers.torture --name full $(TORTURE_ARGS)

spark-era: install $(SPARK_ERA_STAMP) ## Delta Spark 3.3.2 on Spark 3.5 (AWS Glue 5, EMR 7) beside the kernel's 4.4.0: its own environment in .envs/delta-spark-3.3.2/ (837 MB) and its jars in .cache/ivy/ (35 MB), for make matrix, make test-heavy and notebook 09's SPARK_ERA; make install leaves it out

matrix: install spark-era ## the conflict matrix: every ordered pair of writes raced from a stale snapshot in each delta-rs era, Delta Spark 4.4.0 and 3.3.2, mixed pairs and on S3, with each engine's other interleaving, two more table layouts and the same operation from two jobs on parts of their own (27 min on a shared 2-core machine before Delta Spark 3.3.2 joined, whose 467 cells took 13 min 46 s alone and its 173 on S3 6 min, 2026-12-07; 10 min idle before the backfill pairs); results in build/matrix/full/ only: make publish RUN=build/matrix/full makes them the committed run
	$(PY) -m helpers.stores.services run -- $(PY) -m helpers.matrix --name full $(MATRIX_ARGS)
	$(MAKE) --no-print-directory lost-answer

lost-answer: install uc-server ## a commit whose answer is lost, on every commit path of the answer page (deltalake in each era, Delta Spark, the catalog), with and without each engine's remedy, 20 trials each, judged from storage (make matrix runs it too); results in build/lost_answer/full/ only: make publish RUN=build/lost_answer/full makes them the committed data/lost_answer.csv
	$(PY) -m helpers.stores.services run -- $(PY) -m helpers.lost_answer --name full $(LOST_ANSWER_ARGS)

catalog-run: install uc-server ## notebook 15's long run: the catalog down for 3 minutes while two writers and a reader run (a load balancer's 503, then connections refused), Java Delta Kernel raced beside Delta Spark 10 times, requests and latency of 100 commits per table with and without the catalog, auto compaction and log cleanup; about 20 min on 2 cores; results in build/catalog/full/ only: make publish RUN=build/catalog/full makes them the committed data/catalog_run.json
	$(PY) -m helpers.catalog.long_run --name full $(CATALOG_RUN_ARGS)

publish: ## for maintainers: make runs of yours the committed ones (RUN=build/bench/full, or several: RUN="build/bench/full build/producers/full"; each kind from its folder, or KIND=bench, torture, producers, matrix, matrix-mixed, lost_answer or catalog), once their checks pass: copied into data/, then docs/answer.md, docs/disagreements.md and docs/answer.html written again from them
	@test -n "$(RUN)" || { echo 'Name the run: make publish RUN=build/<kind>/<name> (e.g. RUN=build/bench/full)'; exit 2; }
	$(PY) -m helpers.publish $(if $(KIND),--kind $(KIND)) $(RUN)

answer: ## open docs/answer.html, the answer as a page you query, in a browser (or print its path)
	@$(PYTHON) -c 'import os, pathlib, sys, webbrowser; page = pathlib.Path("docs/answer.html").resolve(); shown = (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform in ("darwin", "win32")) and webbrowser.open(page.as_uri()); print(("Opened " if shown else "Open this file in a browser: ") + page.as_uri())'

audit: install ## check a Delta table from storage, every problem named (TABLE=s3://... or az://... or a path)
	@test -n "$(TABLE)" || { echo 'Name the table: make audit TABLE=s3://<bucket>/<table> (or az://..., or a local path)'; exit 2; }
	$(PY) -m helpers.runs.audit $(TABLE)

student: install ## the student edition: notebooks/ with their exercises' answers taken out by nbgrader, into student/; then docs/evidence/, a copy to read of each notebook the answer page cites
	$(PY) -m helpers.jupyter.student build
	$(PY) -m helpers.jupyter.rendered

outputs: install ## re-execute notebooks in place to refresh their committed outputs (NB=03 for one)
	$(PY) -m helpers.stores.services run -- $(PY) -m helpers.jupyter.workbook refresh $(NB)

LAB_DIR ?= notebooks

lab: install ## emulators up, JupyterLab on 127.0.0.1 (LAB_DIR=student: the student edition); kernels' sockets in a private temporary folder
	@test -d "$(LAB_DIR)" || { echo 'LAB_DIR=$(LAB_DIR) is not a folder here: use notebooks (the default) or student'; exit 2; }
	$(PY) -m helpers.stores.services up
	$(PY) -m helpers.jupyter.kernels lab $(LAB_DIR)

lab-check: install ## notebook 01 run in JupyterLab by headless Chromium (Debian: apt-get install chromium chromium-driver); screenshot in build/lab-check/
	$(PY) -m helpers.jupyter.lab_check

cluster: install ## a standalone Spark master and 2 workers on 127.0.0.1 (then: export WORKBOOK_SPARK_MASTER=spark://127.0.0.1:7077)
	$(PY) -m helpers.spark.cluster up

cluster-stop: ## stop the Spark cluster `make cluster` started
	@if [ -x $(PY) ]; then $(PY) -m helpers.spark.cluster down; fi

cluster-check: install $(if $(filter versitygw,$(WORKBOOK_S3_SERVER)),versitygw) ## notebook 09 run on a standalone Spark cluster, every driver an application of it (about 4 min, up to 10 on a busy machine; WORKBOOK_S3_SERVER=versitygw: with versitygw playing S3, as CI runs it)
	$(PY) -m helpers.stores.services run -- $(PY) -m pytest --cluster tests/cluster

services: install ## start the emulators (moto: S3 + DynamoDB, Azurite: Azure Blob)
	$(PY) -m helpers.stores.services up

stop: ## stop the emulators (and the Spark cluster) the workbook started
	@if [ -x $(PY) ]; then $(PY) -m helpers.stores.services down; $(PY) -m helpers.spark.cluster down --quiet; fi

status: ## show which emulators answer
	$(PY) -m helpers.stores.services status

reset: ## wipe emulator state (buckets, tables, containers) and local tables
	$(PY) -m helpers.stores.services reset
	rm -rf .state/tables

prefetch: install spark-era ## download every wheel, jar and npm package (Delta Spark 3.3.2's environment too), versitygw's Go modules if Go is here and the Unity Catalog server's crates if Rust is, for offline use (then: make OFFLINE=1 ...)
	$(PY) -m helpers.spark.install fetch-jars
	npm cache verify --loglevel=error >/dev/null
	$(PY) -m helpers.stores.versitygw build --if-go
	$(PY) -m helpers.catalog.server_build build --if-cargo
	@echo "Caches filled: $$(du -sh .cache | cut -f1) in .cache/. Offline from now on: make OFFLINE=1 <target>"

versitygw: install ## build the real S3 server versitygw (pinned, with the machine's Go 1.25+) into .cache/bin/, once; OFFLINE=1 builds from .cache/go/
	$(PY) -m helpers.stores.versitygw build $(if $(OFFLINE),--offline)

uc-server: .preflight-problems ## build the Unity Catalog server of notebook 15 (olai-uc-server 0.0.11 with the workbook's patch sts-endpoint, unoptimised; the machine's Rust 1.95+) into .cache/uc/, once (make test builds it in the background, beside the installs and the tests: 843 s so in a cold CI run on 2026-12-08, 429 s beside the installs alone); OFFLINE=1 builds from the crates in .cache/uc/
	@# the machine's Python, not the workbook's: the build needs only its standard library, so on a
	@# cold machine it starts at once instead of after the Python environment
	$(PYTHON) -m helpers.catalog.server_build build $(if $(OFFLINE),--offline)

PROBE_ARGS ?=
probe-store: install ## is an S3 store safe for Delta? Probes AWS_ENDPOINT_URL (with AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY), else the workbook's moto; PROBE_ARGS="--help" lists the options
	$(if $(AWS_ENDPOINT_URL),$(PY) -m helpers.probe $(PROBE_ARGS),$(PY) -m helpers.stores.services run moto -- $(PY) -m helpers.probe $(PROBE_ARGS))

# S3_NOTEBOOKS="04 05" on the command line runs some of them (.ci/run leaves out 09, which it runs on the cluster with versitygw);
# the notebooks whose code writes to S3 (tests/test_workbook.py keeps the list so): 13 races its pairs on local disk only
S3_NOTEBOOKS := 04 05 08 09 10 14
VERSITYGW_BENCH := -p 'protocols=["azure", "s3-conditional-put"]' 11
VERSITYGW_TORTURE := --protocols s3-conditional-put s3-unsafe-rename --per-writer 12 --kills 4 --restarts 1 --min-commits 40
# The DynamoDB lock protocol (deltalake 1.5.1) is left out of the benchmark and the torture subset on versitygw:
# there a reader's repair of a live commit fails its writer (findings/deltalake-dynamodb-repair-of-a-live-commit),
# and, since versitygw copies a deleted object, the writer's retry commits the append twice
# (findings/deltalake-dynamodb-reclaim-after-a-refused-copy, findings/versitygw-copies-a-deleted-object).
s3-on-versitygw: versitygw ## the S3 notebooks ($(S3_NOTEBOOKS)), the benchmark's small run (notebook 11) and a torture subset with the real S3 server versitygw playing S3 and moto DynamoDB (WORKBOOK_S3_SERVER=versitygw; about 13 min; CI runs it); executed copies in build/on-versitygw/, torture results in build/torture/on-versitygw/
	WORKBOOK_S3_SERVER=versitygw $(PY) -m helpers.stores.services run -- $(PY) -m helpers.jupyter.workbook run --into build/on-versitygw $(S3_NOTEBOOKS)
	WORKBOOK_S3_SERVER=versitygw $(PY) -m helpers.stores.services run -- $(PY) -m helpers.jupyter.workbook run --into build/on-versitygw/bench $(VERSITYGW_BENCH)
	WORKBOOK_S3_SERVER=versitygw $(PY) -m helpers.torture --name on-versitygw $(VERSITYGW_TORTURE)

BENCH_SERVERS_ARGS ?= --protocols azure,s3-conditional-put,s3-dynamodb-lock --writers 1,4 --appends 8
bench-servers: versitygw ## the benchmark's serial limit and N=4 with each S3 protocol on moto and on versitygw, in one run (Azure beside them as the reference; about 3 min; results in build/bench/servers/)
	WORKBOOK_S3_SERVER=versitygw $(PY) -m helpers.stores.services run -- $(PY) -m helpers.bench --name servers --s3-servers moto,versitygw $(BENCH_SERVERS_ARGS)

probe-versitygw: versitygw ## the store probe against a versitygw of its own (a real S3 server), started and stopped around it; then the findings that need versitygw (tests/findings_on_versitygw.py)
	$(PY) -m helpers.stores.versitygw run -- $(PY) -m helpers.probe $(PROBE_ARGS)
	$(PY) -m pytest tests/findings_on_versitygw.py

clean: ## remove executed notebooks and test output
	rm -rf build .pytest_cache

distclean: stop clean ## remove everything `make install` created, caches included
	rm -rf .venv .envs node_modules .cache .state

MIXED_SPARK_ERA ?= delta-spark-4.4.0
.PHONY: matrix-mixed
matrix-mixed: install spark-era ## Delta Spark 4.4.0 (MIXED_SPARK_ERA=delta-spark-3.3.2: 3.3.2 on Spark 3.5, into build/matrix/mixed-dynamodb-3.3/) (DynamoDB log store) and deltalake 1.5.1 (its DynamoDB lock) on one S3 table through one lock table: every ordered pair of the conflict matrix's append, overwrite, delete, update, merge and optimize, and the answer page's other pairs (replaceWhere, DELETE of every row, Z-order, VACUUM against the writes), raced in both orders (23 min on a shared, loaded 2-core machine; the six operations' pairs alone, MATRIX_MIXED_ARGS=--ops append,overwrite,delete,update,merge,optimize, 6 min), judged from the log, the data files and the lock table's items; results in build/matrix/mixed-dynamodb/ only: make publish RUN=build/matrix/mixed-dynamodb makes them the committed run
	$(PY) -m helpers.stores.services run -- $(if $(filter delta-spark-4.4.0,$(MIXED_SPARK_ERA)),$(PY),$(CURDIR)/.envs/$(MIXED_SPARK_ERA)/bin/python) -m helpers.matrix.mixed $(MATRIX_MIXED_ARGS)
