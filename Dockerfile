# syntax=docker/dockerfile:1
#
# Three images from one build, chosen with --target:
#   api          the stateless API (no inference engine in it at all)
#   worker       a CPU worker; the project's tiny model is baked in (models/tiny-chat.gguf)
#   worker-cuda  a CUDA worker for NVIDIA GPUs: mount your GGUF models and run it with a GPU
#
#   docker build --target api -t chat-api .
#   docker build --target worker -t chat-worker .
#   docker build --target worker-cuda -t chat-worker-cuda .
#
# The CPU worker uses node-llama-cpp's prebuilt CPU binary. The CUDA worker does not use its
# prebuilt CUDA binary: measured on an H100 (driver 580, CUDA 13.0) that binary loads a model and
# then aborts the process at the first decode ("the provided PTX was compiled with an unsupported
# toolchain"). So a build stage on NVIDIA's CUDA *devel* image compiles llama.cpp from the source
# node-llama-cpp ships with itself (its git bundle: no network beyond the npm registry), with real
# code for every architecture in CUDA_ARCHITECTURES plus PTX for the newest, and the runtime stage
# is the matching CUDA *runtime* image.
#
# Driver needed on the hosts (with the NVIDIA Container Toolkit): CUDA 13.0 images need driver
# >= 580; for older drivers build with CUDA_VERSION=12.8.1 (driver >= 570) or 12.4.1 (>= 550).
#   docker build --target worker-cuda --build-arg CUDA_ARCHITECTURES="90-real;90-virtual" -t chat-worker-cuda .

ARG NODE_IMAGE=node:24-bookworm-slim
ARG CUDA_VERSION=13.0.1
# Ampere (80, 86), Ada (89), Hopper (90), Blackwell (100, 120): real code for each, PTX for the
# newest so that a later GPU can still JIT it.
ARG CUDA_ARCHITECTURES="80-real;86-real;89-real;90-real;100-real;120-real;120-virtual"

# ---- build: both apps and the tiny model (dev dependencies live only here) ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# node-llama-cpp's postinstall only probes its prebuilt binaries: nothing to do at build time.
RUN NODE_LLAMA_CPP_POSTINSTALL=skip npm ci --no-audit --no-fund
COPY tsconfig.json nest-cli.json ./
COPY libs libs
COPY apps apps
COPY tools tools
RUN npm run build && npm run model

# ---- production dependencies only; install scripts are not needed with prebuilt binaries ----
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
 && rm -f node_modules/node-llama-cpp/llama/gitRelease.bundle \
 && npm cache clean --force

# The API never loads a model: no llama.cpp at all.
FROM prod-deps AS api-deps
RUN rm -rf node_modules/node-llama-cpp node_modules/@node-llama-cpp

# The CPU worker keeps llama.cpp's CPU build only.
FROM prod-deps AS worker-deps
RUN rm -rf node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan

# The CUDA worker runs the llama.cpp it compiles below: no prebuilt GPU binary to fall back on,
# and no CPU fallback either (GPU=cuda that cannot be honoured stops the worker at boot).
FROM prod-deps AS worker-cuda-deps
RUN rm -rf node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan

# ---- llama.cpp for CUDA, compiled from node-llama-cpp's bundled source ----
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu24.04 AS llama-cuda-build
ARG CUDA_ARCHITECTURES
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ make python3 git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=build /app/package.json ./
# The build stage's node-llama-cpp still holds its git bundle of the llama.cpp release it pins.
COPY --from=build /app/node_modules ./node_modules
ENV NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}
RUN node node_modules/node-llama-cpp/dist/cli/cli.js source download --gpu cuda --noUsageExample \
 && test -d node_modules/node-llama-cpp/llama/localBuilds

# ---- api ----
FROM ${NODE_IMAGE} AS api
ENV NODE_ENV=production PORT=8080
WORKDIR /app
COPY --from=api-deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist/apps/api ./dist/apps/api
USER node
EXPOSE 8080
# No curl or wget in the image: Node's own fetch asks for readiness.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/apps/api/apps/api/src/main.js"]

# ---- worker (CPU) ----
FROM ${NODE_IMAGE} AS worker
ENV NODE_ENV=production GPU=false HEALTH_PORT=9464 MODEL_PATH=/app/models/tiny-chat.gguf
WORKDIR /app
COPY --from=worker-deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist/apps/worker ./dist/apps/worker
COPY --from=build /app/models ./models
USER node
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HEALTH_PORT || 9464) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The worker finishes the jobs it holds on SIGTERM: give it time (docker stop -t / stop_grace_period).
CMD ["node", "dist/apps/worker/apps/worker/src/main.js"]

# ---- worker-cuda: the same worker on NVIDIA's CUDA runtime, with Node and its llama.cpp build ----
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS worker-cuda
ARG CUDA_ARCHITECTURES
COPY --from=build /usr/local/bin/node /usr/local/bin/node
# node-llama-cpp names a local build by its CMake options, read from these variables: the same
# value at run time finds the build compiled above.
ENV NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES}
ENV NODE_ENV=production GPU=cuda HEALTH_PORT=9464 MODEL_PATH=/models/model.gguf \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
WORKDIR /app
COPY --from=worker-cuda-deps /app/node_modules ./node_modules
# getLlama looks for a local build first: the one compiled for these GPUs.
COPY --from=llama-cuda-build /app/node_modules/node-llama-cpp/llama/localBuilds ./node_modules/node-llama-cpp/llama/localBuilds
COPY --from=build /app/package.json ./
COPY --from=build /app/dist/apps/worker ./dist/apps/worker
# The ubuntu base image's unprivileged user.
USER ubuntu
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HEALTH_PORT || 9464) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/apps/worker/apps/worker/src/main.js"]
