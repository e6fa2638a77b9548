# klent: the HTTP API + web page (`klent serve`), with onnxruntime-gpu and torch for GPU serving
# and training.
#
#   docker build -t klent .                              # CUDA image (needs the NVIDIA runtime)
#   docker build -t klent:cpu --build-arg VARIANT=cpu .  # CPU-only image, much smaller
#   docker run --gpus all -p 8000:8000 klent             # then open http://localhost:8000/
#   docker run -p 8000:8000 -v "$PWD/weights:/models:ro" klent:cpu klent serve --host 0.0.0.0 --models /models
#
# The image serves the models in weights/ (copied in at build time) unless --models points
# elsewhere.  Set KLENT_API_KEYS=key1,key2 to require an API key on /v1.

ARG VARIANT=gpu

# CUDA 13 + cuDNN 9 runtime: onnxruntime-gpu on PyPI is built for CUDA 13 (1.31.1 requires the
# nvidia-*-cu13 libraries), so are torch's cu130 wheels.  That pair ran the engine on CUDA on an
# H100 (driver 580; benchmarks/RESULTS.md, "The engine on a GPU"); with a CUDA 12 runtime the
# CUDA provider cannot load and the engine would quietly run on the CPU.
FROM nvidia/cuda:13.0.2-cudnn-runtime-ubuntu24.04 AS base-gpu
ENV ONNXRUNTIME_PACKAGE=onnxruntime-gpu \
    TORCH_INDEX=https://download.pytorch.org/whl/cu130

FROM ubuntu:24.04 AS base-cpu
ENV ONNXRUNTIME_PACKAGE=onnxruntime \
    TORCH_INDEX=https://download.pytorch.org/whl/cpu

# hadolint ignore=DL3006
FROM base-${VARIANT} AS runtime

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/klent \
    PATH=/opt/klent/bin:$PATH

# Ubuntu's python3 is 3.12; versions follow the base image's release.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv "$VIRTUAL_ENV" \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin klent

WORKDIR /app

# torch first, from the index that matches the variant (CUDA 12 or CPU-only wheels).
ARG TORCH_VERSION=2.13.0
RUN pip install --index-url "$TORCH_INDEX" "torch==$TORCH_VERSION"

COPY pyproject.toml README.md ./
COPY klent ./klent
# The models are package data (klent.weights): they must be in the tree pip installs from.
COPY weights ./weights
# The GPU image swaps onnxruntime (a core dependency) for onnxruntime-gpu: both install the
# same `onnxruntime` module, so only one of them may be present.  Versions: pyproject.toml.
# hadolint ignore=DL3013
RUN pip install ".[server,train]" \
    && if [ "$ONNXRUNTIME_PACKAGE" != onnxruntime ]; then \
         pip uninstall -y onnxruntime && pip install "$ONNXRUNTIME_PACKAGE>=1.31"; \
       fi \
    && python -c "import onnxruntime, torch; print('onnxruntime', onnxruntime.__version__, onnxruntime.get_available_providers()); print('torch', torch.__version__)"

# The numeric id of the `klent` user made above (resolvable without the image's passwd).
USER 10001:10001
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# SIGTERM makes uvicorn stop accepting connections and finish the requests in flight.
STOPSIGNAL SIGTERM
CMD ["klent", "serve", "--host", "0.0.0.0", "--port", "8000", "--models", "/app/weights"]
