# One image for every batchgate process: `batchgate webhook`, `batchgate controller`, ...
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY pyproject.toml README.md ./
COPY batchgate batchgate
COPY webhook webhook
COPY controller controller
COPY localcluster localcluster
COPY certs certs
COPY demo demo
COPY manifests manifests
RUN pip install --no-cache-dir --no-deps . && useradd --uid 65532 --no-create-home batchgate
USER 65532
ENTRYPOINT ["batchgate"]
