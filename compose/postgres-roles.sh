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
# Passwords come from the Docker secrets of docker-compose.yml (files under /run/secrets, never the environment); the
# superuser's is used by nothing else.
set -eu
secret() {
  value=$(cat "/run/secrets/$1")
  [ -n "$value" ] || { echo "postgres-roles.sh: the secret $1 is empty (see the top of docker-compose.yml)" >&2; exit 1; }
  printf '%s' "$value"
}
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_password="$(secret payments_owner_db_password)" \
  -v api_password="$(secret payments_api_db_password)" \
  -v worker_password="$(secret payments_worker_db_password)" \
  -v temporal_password="$(secret temporal_db_password)" <<'SQL'
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
