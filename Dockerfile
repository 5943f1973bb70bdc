# JupyterLab for the workbook: Python 3.11, Java 17, the pinned kernel and writer environments,
# and the Spark jars resolved at build time. The emulators run in their own containers
# (docker-compose.yml); this image installs exactly what `make install-python` installs natively.
# Notebook 15's Unity Catalog server, built as `make uc-server` builds it natively
# (helpers/catalog/server_build.py): the crate's sources at the same version, the workbook's patch
# applied (helpers/catalog/patches/: it changes nothing unless its variable is set), the crate's own
# lock file and the same profile; only the binary is kept
FROM rust:1.95-slim-bookworm AS uc-server
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev patch \
 && rm -rf /var/lib/apt/lists/*
COPY helpers/catalog/patches/sts-endpoint.patch /tmp/
RUN cargo new --quiet --vcs none /tmp/fetch \
 && echo 'olai-uc-server = "=0.0.11"' >> /tmp/fetch/Cargo.toml \
 && cargo fetch --quiet --manifest-path /tmp/fetch/Cargo.toml \
 && tar xzf "$CARGO_HOME"/registry/cache/*/olai-uc-server-0.0.11.crate -C /tmp \
 && cd /tmp/olai-uc-server-0.0.11 \
 && patch -p1 < /tmp/sts-endpoint.patch \
 && CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 \
    cargo install --path . --features bin --locked --root /opt/uc-server

FROM python:3.11.7-slim-bookworm

RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless make procps gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*

# Telemetry off in every container of this image (JupyterLab, the Spark master and workers), as
# natively (helpers/ground/config.py NO_TELEMETRY)
ENV DO_NOT_TRACK=1 DAFT_ANALYTICS_ENABLED=0 SCARF_NO_ANALYTICS=true

WORKDIR /workbook
COPY pyproject.toml Makefile README.md ./
COPY requirements/ requirements/
COPY helpers/ helpers/
RUN make install-python PYTHON=python3.11
COPY . .
COPY --from=uc-server /opt/uc-server/bin/uc-server .cache/uc/install/bin/uc-server
RUN .venv/bin/python -c "from helpers.catalog import server_build; server_build.STAMP.write_text(server_build.stamp_text() + '\\n')"

EXPOSE 8888
# as `make lab` starts it (kernels' sockets in a private temporary folder), listening on every
# interface of the container so that the published port reaches it
CMD [".venv/bin/python", "-m", "helpers.jupyter.kernels", "lab", "notebooks", "--ip=0.0.0.0", "--port=8888", "--no-browser"]
