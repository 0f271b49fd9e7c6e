# syntax=docker/dockerfile:1
# Lattice: one image for every component; the arguments choose which one runs:
#   docker run lattice:0.1.0                       `lattice up`: every part in one process, embedded
#   docker run lattice:0.1.0 orchestrator          one component, on the adapters LATTICE_* select
#   docker run lattice:0.1.0 vss serving           (deploy/kubernetes/ and deploy/compose.yaml wire them)
# Build from the repository root: docker build -t lattice:0.1.0 .

# Build: install from the lockfile (dev dependencies too: buf, ts-proto and tsc generate and compile),
# compile dist/, pack the package, then drop the dev dependencies.
FROM node:26-bookworm AS build
WORKDIR /build
# onnxruntime-node's install step would download CUDA libraries (the CPU build ships in the package;
# package.json's allowScripts denies that step to the npm versions that read it, the variable to the
# others). hnswlib-node compiles with node-gyp (python3, make and g++ are in this image) against this
# Node's own headers instead of downloading them.
ENV ONNXRUNTIME_NODE_INSTALL=skip \
    npm_config_nodedir=/usr/local
# `npm ci` runs the prepare script, which generates src/gen from proto/ with buf.
COPY package.json package-lock.json .npmrc buf.yaml buf.gen.yaml ./
COPY scripts/gen-proto.mjs scripts/build.mjs scripts/build-console.mjs scripts/dist-freshness.mjs ./scripts/
COPY proto ./proto
# `npm ci` runs the install script too, which compiles the parallel graph builder (native/).
COPY native/hnsw-parallel/binding.gyp native/hnsw-parallel/build.mjs ./native/hnsw-parallel/
COPY native/hnsw-parallel/src ./native/hnsw-parallel/src
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY examples ./examples
# The image holds exactly what `npm pack` publishes (package.json "files"), with the lockfile's
# production dependencies (and the native addons built above, the parallel graph builder among them:
# the runtime stage has no compiler) beside it. onnxruntime-node ships its macOS and Windows builds
# too (about 220 MB): a Linux image needs neither.
RUN npm run build \
 && npm pack --ignore-scripts --pack-destination /tmp \
 && mkdir /opt/lattice \
 && tar -xzf /tmp/lattice-*.tgz -C /opt/lattice --strip-components=1 \
 && mkdir -p /opt/lattice/native/hnsw-parallel/build/Release \
 && cp native/hnsw-parallel/build/Release/hnsw_parallel.node /opt/lattice/native/hnsw-parallel/build/Release/ \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && cp -a node_modules /opt/lattice/node_modules \
 && rm -rf /opt/lattice/node_modules/onnxruntime-node/bin/napi-v*/darwin \
           /opt/lattice/node_modules/onnxruntime-node/bin/napi-v*/win32
COPY deploy/docker/healthcheck.mjs /opt/lattice/healthcheck.mjs

# Runtime: Node and the compiled package only (no compiler, no TypeScript loader), as a non-root user.
FROM node:26-bookworm-slim AS runtime
# MALLOC_ARENA_MAX: glibc gives each thread that allocates (the PGlite and graph-build workers, the
# libuv pool) an arena of its own that never shrinks; two keep a fresh lattice up ~140 MB smaller.
ENV NODE_ENV=production \
    LATTICE_HOST=0.0.0.0 \
    LATTICE_DATA_DIR=/var/lib/lattice \
    MALLOC_ARENA_MAX=2
# A numeric user, so Kubernetes' runAsNonRoot can check it without a runAsUser of its own.
RUN groupadd --system --gid 10001 lattice \
 && useradd --system --uid 10001 --gid lattice --home-dir /var/lib/lattice --shell /usr/sbin/nologin lattice \
 && mkdir -p /var/lib/lattice \
 && chown lattice:lattice /var/lib/lattice
COPY --from=build /opt/lattice /opt/lattice
WORKDIR /var/lib/lattice
USER 10001:10001
# gRPC: platform health (lattice up), orchestrator, feature store, compute, vss serving, model server;
# HTTP: vss admin, ops
# (/healthz /readyz /metrics). Each component listens on its own subset (see deploy/README.md).
EXPOSE 50050 50051 50052 50053 50055 8001 8090 9464
# /readyz of the ops server; featurestore and modelserver have none: give them
# `node /opt/lattice/healthcheck.mjs --grpc PORT` (deploy/compose.yaml does).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "/opt/lattice/healthcheck.mjs"]
ENTRYPOINT ["node", "/opt/lattice/bin/lattice.js"]
CMD ["up"]
