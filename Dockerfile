# syntax=docker/dockerfile:1
#
# Four images from one build, chosen with --target:
#   api          the stateless API (no inference engine in it at all)
#   worker       a CPU worker; the project's tiny models are baked in (models/tiny-chat.gguf, tiny-embed.gguf)
#   worker-llama-server  the same with ENGINE=llama-server: llama.cpp's own server, built from the same source
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
# code for every architecture in CUDA_ARCHITECTURES plus PTX that later GPUs can JIT, and the
# runtime stage is the matching CUDA *runtime* image.
#
# Driver needed on the hosts (with the NVIDIA Container Toolkit), by CUDA_VERSION. An older CUDA
# cannot compile for the newer architectures, so build it with the architecture list given here:
#   CUDA_VERSION=13.0.1 (default): driver >= 580, the default CUDA_ARCHITECTURES
#   CUDA_VERSION=12.9.1: driver >= 575, the default CUDA_ARCHITECTURES
#   CUDA_VERSION=12.8.1: driver >= 570, CUDA_ARCHITECTURES="80-real;86-real;87-real;89-real;90-real;100-real;120-real;100-virtual"
#   CUDA_VERSION=12.6.3: driver >= 560, CUDA_ARCHITECTURES="80-real;86-real;87-real;89-real;90-real;90-virtual"
#
#   docker build --target worker-cuda --build-arg CUDA_VERSION=12.8.1 \
#     --build-arg CUDA_ARCHITECTURES="80-real;86-real;87-real;89-real;90-real;100-real;120-real;100-virtual" -t chat-worker-cuda .
#
# Each architecture adds compile time and image size: for one kind of GPU, list only its own,
# e.g. CUDA_ARCHITECTURES="90-real;90-virtual" for H100/H200 hosts.

ARG NODE_IMAGE=node:24-bookworm-slim
ARG CUDA_VERSION=13.0.1
# Real code for each Ampere-to-Blackwell architecture CUDA 13.0 compiles for: Ampere 80 (A100),
# 86 (RTX 30, A10, A40) and 87 (Jetson Orin), Ada 89 (L4, L40S, RTX 40), Hopper 90 (H100, H200,
# GH200), Blackwell 100 (B200), 103 (B300), 120 (RTX 50, RTX PRO 6000) and 121 (GB10). Plus PTX
# that any later GPU can JIT: llama.cpp turns every 12X entry into 12Xa (Blackwell's FP4
# instructions are not forward-compatible), whose PTX runs on that one architecture only, so the
# PTX is that of the newest architecture it leaves portable, 103.
ARG CUDA_ARCHITECTURES="80-real;86-real;87-real;89-real;90-real;100-real;103-real;120-real;121-real;103-virtual"

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
# Node and npm both: node-llama-cpp compiles through `npm run cmake-js-llama`, and its CMake file
# asks `node` where node-addon-api's headers are.
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=build /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && node --version && npm --version
WORKDIR /app
COPY --from=build /app/package.json ./
# The build stage's node-llama-cpp still holds its git bundle of the llama.cpp release it pins.
COPY --from=build /app/node_modules ./node_modules
# node-llama-cpp passes NODE_LLAMA_CPP_CMAKE_OPTION_<NAME> to CMake as -D<NAME>, and names the build
# folder after these options: the worker-cuda stage sets the very same ones to find it.
# GGML_NATIVE=OFF: no -march=native, which would tie the image to CPUs like the build host's (a
# host without one of its instructions would die of SIGILL).
ENV NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} \
    NODE_LLAMA_CPP_CMAKE_OPTION_GGML_NATIVE=OFF
# Then only the compiled result is kept: the CMake tree of a many-architecture build is gigabytes.
RUN node node_modules/node-llama-cpp/dist/cli/cli.js source download --gpu cuda --noUsageExample \
 && cd node_modules/node-llama-cpp/llama/localBuilds \
 && test "$(ls -d ./*/Release/llama-addon.node | wc -l)" = 1 \
 && find . -mindepth 2 -maxdepth 2 ! -name Release ! -name buildDone.status -exec rm -rf {} +

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

# ---- llama-server from the same bundled llama.cpp source, for worker-llama-server ----
# Portable (no -march=native): llama.cpp's CPU backend picks what the host's CPU has at run time.
FROM build AS llama-server-build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN LLAMA_SERVER_CACHE=/opt/llama-server npm run llama-server:build -- --portable \
 && cp -L .llama-server/bin/llama-server /usr/local/bin/llama-server

# ---- worker-llama-server: the CPU worker whose engine is llama.cpp's own server (ENGINE=llama-server) ----
FROM worker AS worker-llama-server
USER root
# llama.cpp's CPU backend runs on OpenMP.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=llama-server-build /usr/local/bin/llama-server /usr/local/bin/llama-server
ENV ENGINE=llama-server LLAMA_SERVER_BIN=/usr/local/bin/llama-server
USER node

# ---- worker-cuda: the same worker on NVIDIA's CUDA runtime, with Node and its llama.cpp build ----
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu24.04 AS worker-cuda
ARG CUDA_ARCHITECTURES
# llama.cpp's CPU backend (layers not offloaded, sampling) runs on OpenMP.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/node /usr/local/bin/node
# The same CMake options as the llama-cuda-build stage: node-llama-cpp derives the local build's
# folder name from them (with platform, arch and backend), and finds the build compiled there.
ENV NODE_LLAMA_CPP_CMAKE_OPTION_CMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHITECTURES} \
    NODE_LLAMA_CPP_CMAKE_OPTION_GGML_NATIVE=OFF
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
# Loading a large model, then the boot self-test (a few tokens in a child process) take a while.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HEALTH_PORT || 9464) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/apps/worker/apps/worker/src/main.js"]
