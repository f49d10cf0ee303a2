#!/bin/sh
# docker-compose: runs once, when the postgres volume is first initialised (docker-entrypoint-initdb.d), as the
# superuser. It creates one role per process kind, none a superuser, and the databases they own or use
# (docs/security.md "Least privilege"):
#
#   payments_owner   owns the `payments` database and its tables: migrations and the bootstrap credential only
#   payments_api     the api processes: SELECT, INSERT, UPDATE, DELETE on the platform's tables (granted by
#                    `payments migrate --api-role payments_api --worker-role payments_worker` after every migration)
#   payments_worker  the worker processes: the same, except the service credentials
#   temporal         owns `temporal` and `temporal_visibility` (schema set up by temporal-schema), nothing else
#
# Passwords come from the environment (see docker-compose.yml); the superuser's is used by nothing else.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_password="$PAYMENTS_OWNER_DB_PASSWORD" \
  -v api_password="$PAYMENTS_API_DB_PASSWORD" \
  -v worker_password="$PAYMENTS_WORKER_DB_PASSWORD" \
  -v temporal_password="$TEMPORAL_DB_PASSWORD" <<'SQL'
CREATE ROLE payments_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_password';
CREATE ROLE payments_api LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'api_password';
CREATE ROLE payments_worker LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'worker_password';
CREATE ROLE temporal LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'temporal_password';
CREATE DATABASE payments OWNER payments_owner;
CREATE DATABASE temporal OWNER temporal;
CREATE DATABASE temporal_visibility OWNER temporal;
REVOKE CONNECT ON DATABASE payments, temporal, temporal_visibility FROM PUBLIC;
GRANT CONNECT ON DATABASE payments TO payments_api, payments_worker;
REVOKE CONNECT ON DATABASE postgres FROM PUBLIC;
SQL
