# The `payments` binary; one image runs any role: `payments serve --roles api|facade|worker`.
# Build stage: every dependency, then `npm run build` (TypeScript to dist/, the workflow bundle prebuilt).
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

# Runtime stage: production dependencies and the compiled code only (no tsx, no TypeScript), as the node user.
FROM node:20-bookworm-slim
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
# choice: PAYMENTS_MODE=test, or the compose profile test-mode.
ENV HTTP_HOST=0.0.0.0 PLATFORM_KEY_DIR=/keys PAYMENTS_RUN=compiled PAYMENTS_MODE=live
USER node
# The façade answers /healthz (database and Temporal checked through the RPC); other roles have no HTTP port, so
# the check passes when nothing listens on HTTP_PORT in a worker- or api-only container.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD node -e "const p=process.env.HTTP_PORT||3000;require('node:net').connect(p,'127.0.0.1').on('connect',()=>fetch('http://127.0.0.1:'+p+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))).on('error',()=>process.exit(0))"
ENTRYPOINT ["node", "bin/payments"]
CMD ["serve", "--roles", "api,facade,worker"]
