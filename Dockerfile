# One image for every batchgate process (`batchgate webhook`, `batchgate controller`, `batchgate certs`).
# Build stage: install the runtime requirements and the package into a virtualenv.
# The base is pinned by digest (the multi-arch index of python:3.11.13-slim-bookworm), once for
# both stages; a rebuild never picks up a different base silently (docs/install.md, "Image").
ARG BASE=python:3.11.13-slim-bookworm@sha256:86adf8dbadc3d6e82ee5dd2c74bec2e1c2467cdad47886280501df722372d2e1
FROM ${BASE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/batchgate
WORKDIR /src
COPY requirements.txt .
RUN /opt/batchgate/bin/pip install --no-cache-dir -r requirements.txt
COPY pyproject.toml README.md ./
COPY batchgate batchgate
COPY kubeapi kubeapi
COPY webhook webhook
COPY controller controller
COPY certs certs
COPY dashboard dashboard
RUN /opt/batchgate/bin/pip install --no-cache-dir --no-deps . \
    && /opt/batchgate/bin/python -m compileall -q /opt/batchgate

# Final stage: the interpreter, the virtualenv, nothing else (no pip cache, no sources, no tests,
# no local cluster). Runs as an unprivileged user with a read-only root filesystem in the pods;
# /tmp is an emptyDir there (gunicorn's heartbeat files, the metrics directory).
FROM ${BASE}
ENV PATH=/opt/batchgate/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /opt/batchgate /opt/batchgate
USER 65532:65532
ENTRYPOINT ["batchgate"]
