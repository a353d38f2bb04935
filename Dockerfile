# syntax=docker/dockerfile:1
#
# calls-connector image: `docker build -t calls-connector .`
# Runs the connector by default (config at /etc/calls-connector/config.yaml); any other command works
# too, e.g. `docker run --rm calls-connector validate-config --config ...` or `... sandbox --host 0.0.0.0`.

# Tag for people, digest for the build (the multi-platform index of node:24.21.0-slim): a re-pushed tag cannot
# change what is built. Update both together (`docker buildx imagetools inspect node:<tag>` prints the digest).
ARG NODE_IMAGE=node:24.21.0-slim@sha256:0e0ff40c39bc087845bfb27465a0df4ea419520094bc35842ff83dd8cbe6f9b6

# ---- build: full dependency tree, TypeScript compiled to dist/ -------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/sandbox/package.json ./packages/sandbox/
COPY packages/self-signed/package.json ./packages/self-signed/
# --ignore-scripts: `prepare` would run tsc before the sources are copied.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The workspace packages the product imports by name (@calls-connector/sandbox, @calls-connector/self-signed).
COPY packages/sandbox/tsconfig.build.json ./packages/sandbox/
COPY packages/sandbox/src ./packages/sandbox/src
COPY packages/self-signed/tsconfig.build.json ./packages/self-signed/
COPY packages/self-signed/src ./packages/self-signed/src
# The demo's dev tooling is compiled with the product (demo.ts loads it at run time); the image keeps
# only dist/src, so `demo` in the image says that it needs a source checkout.
COPY tools/devstack ./tools/devstack
RUN npm run build

# ---- runtime: production dependencies only, non-root --------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# NODE_OPTIONS: a V8 heap bound that fits a 512 MiB container (heap 256 MiB + code, buffers, sockets; `npm run bench
# -- memory` measures a 200-location backfill under it). Memory is bounded by the pages in flight, not the data.
# Another container size: `-e NODE_OPTIONS=--max-old-space-size=<about half the limit in MiB>` (docs/operations.md).
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-old-space-size=256 \
    CALLS_CONNECTOR_HEALTH_URL=http://127.0.0.1:9464/healthz
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/sandbox/package.json ./packages/sandbox/
COPY packages/self-signed/package.json ./packages/self-signed/
# --ignore-scripts: `prepare` runs tsc, which is a dev dependency and not installed here.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
# The workspace packages, resolved through node_modules/@calls-connector/* (links npm ci made): the compose
# file's sandbox service runs the sandbox from this image; the auth login listener uses self-signed.
COPY --from=build /app/packages/sandbox/dist ./packages/sandbox/dist
COPY --from=build /app/packages/self-signed/dist ./packages/self-signed/dist
# The Avro schemas are read at run time (found by walking up from dist/src/kafka/avro).
COPY schemas ./schemas
COPY config ./config
# Writable places for the unprivileged user: the token store and a volume shared with the sandbox.
# Named volumes mounted here start with this ownership.
RUN mkdir -p /etc/calls-connector /var/lib/calls-connector /shared \
 && chown node:node /var/lib/calls-connector /shared
USER node
# Metrics (/metrics) and health (/healthz, /readyz): metrics.port in the config.
EXPOSE 9464
# Liveness only (see src/ops/server.ts: readiness is /readyz). No curl in slim images: node fetches.
# Set CALLS_CONNECTOR_HEALTH_URL when metrics.port differs from 9464.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.CALLS_CONNECTOR_HEALTH_URL).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["run", "--config", "/etc/calls-connector/config.yaml"]
