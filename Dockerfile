# The `payments` binary; one image runs any role: `payments serve --roles api|facade|worker`.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production npm_config_fund=false npm_config_audit=false
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY . .
# Volume mount points owned by the runtime user: the platform keys and the RPC service credentials files.
RUN mkdir -p /keys /credentials && chown node:node /keys /credentials && chmod 700 /keys /credentials
ENV HTTP_HOST=0.0.0.0 PLATFORM_KEY_DIR=/keys
USER node
ENTRYPOINT ["node", "bin/payments"]
CMD ["serve", "--roles", "api,facade,worker"]
