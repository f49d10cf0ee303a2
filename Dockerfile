# The `payments` binary; one image runs any role: PAYMENTS_ROLES=api|facade|worker (or `payments serve --roles …`).
# Node 24 LTS, pinned to a release (the same one .ci/run tests on; test/unit/deployment-image.test.ts checks both).
# Linted in CI (npm run lint:docker: dockerfilelint and dockerfile-utils, no finding allowed).
# Build stage: every dependency, then `npm run build` (TypeScript to dist/, the workflow bundle prebuilt).
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

# Runtime stage: production dependencies and the compiled code only, as the node user: no tsx, no TypeScript, no
# embedded PostgreSQL, no @temporalio/testing (devDependencies; the dev stack and the tests load them lazily).
FROM node:24.21.0-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
# Volume mount points owned by the runtime user: the platform keys, the RPC service credentials files, and the
# Temporal certificates (docker-compose: the CA's directory /pki, and /tls with one subdirectory per party).
RUN mkdir -p /keys /credentials /pki /tls && chown node:node /keys /credentials /pki /tls && chmod 700 /keys /credentials /pki && chmod 755 /tls
# Live mode: no sandbox, and start-up refuses every test-mode setting (docs/security.md). Test mode is an explicit
# choice: PAYMENTS_MODE=test, or the compose profile test-mode. PAYMENTS_ROLES: the roles `serve` runs and the
# healthcheck probes (a container running one role sets it).
ENV HTTP_HOST=0.0.0.0 PLATFORM_KEY_DIR=/keys PAYMENTS_RUN=compiled PAYMENTS_MODE=live PAYMENTS_ROLES=api,facade,worker
USER node
# `payments health` probes each role of PAYMENTS_ROLES (docs/operations.md "Health checks"): the façade's /healthz,
# the api's HealthService over its RPC (with the façade's credentials: RPC_TOKEN_FILE), the worker's polls as the
# Temporal server saw them. A container whose role is broken turns unhealthy after 6 failed probes (a minute).
HEALTHCHECK --interval=10s --timeout=15s --retries=6 CMD ["node", "bin/payments", "health"]
# Docker's stop signal: every role drains and exits within SHUTDOWN_GRACE_SECONDS (docs/operations.md "Graceful
# shutdown"), within Docker's 10 s before it kills.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/payments"]
CMD ["serve"]
