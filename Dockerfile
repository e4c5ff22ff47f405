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
# node-llama-cpp ships prebuilt llama.cpp binaries (CPU, Vulkan, and CUDA as
# @node-llama-cpp/linux-x64-cuda*), so nothing is compiled here. Its CUDA binaries link against
# CUDA 13's runtime (libcudart, libcublas, with a CUDA 12 fallback build), which is why the CUDA
# worker runs on NVIDIA's CUDA runtime image; the NVIDIA Container Toolkit adds the driver.

ARG NODE_IMAGE=node:20-bookworm-slim
# Must suit the hosts' driver: CUDA 13 needs driver >= 580; use a 12.x runtime image for older drivers.
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-runtime-ubuntu24.04

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

# The CUDA worker keeps the CUDA build (and the CPU one, as llama.cpp's fallback).
FROM prod-deps AS worker-cuda-deps
RUN rm -rf node_modules/@node-llama-cpp/*-vulkan

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

# ---- worker-cuda: the same worker on NVIDIA's CUDA runtime, with Node copied in ----
FROM ${CUDA_IMAGE} AS worker-cuda
COPY --from=build /usr/local/bin/node /usr/local/bin/node
ENV NODE_ENV=production GPU=cuda HEALTH_PORT=9464 MODEL_PATH=/models/model.gguf \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
WORKDIR /app
COPY --from=worker-cuda-deps /app/node_modules ./node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist/apps/worker ./dist/apps/worker
# The ubuntu base image's unprivileged user.
USER ubuntu
EXPOSE 9464
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HEALTH_PORT || 9464) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/apps/worker/apps/worker/src/main.js"]
