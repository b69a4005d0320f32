#!/bin/sh
# The console image's entry point: one role per container.
#   web                 daphne on $HOST:$PORT (behind the proxy)
#   worker [QUEUES]     a Celery worker for QUEUES (comma-separated; default $SYNTHORG_QUEUES,
#                       else every queue), supervising $SYNTHORG_WORKER_CALLS calls at once
#   beat                the one Celery beat of the cluster
#   migrate             apply migrations and collect static files (once per release)
#   manage ARGS...      any manage.py command (synthorg_audit verify, synthorg_user, ...)
set -eu
cd /opt/synthorg/app
role="${1:-web}"
[ $# -gt 0 ] && shift
case "$role" in
  web)
    exec python3 -m daphne -b "${HOST:-0.0.0.0}" -p "${PORT:-8000}" --proxy-headers \
      synthorg_site.asgi:application
    ;;
  worker)
    queues="${1:-${SYNTHORG_QUEUES:-default,sandbox.subprocess,sandbox.namespace,sandbox.docker,maintenance}}"
    exec python3 -m celery -A synthorg_site worker -Q "$queues" \
      -n "${SYNTHORG_WORKER_NAME:-worker}@%h" \
      --without-gossip --without-mingle -l "${LOG_LEVEL:-INFO}"
    ;;
  beat)
    exec python3 -m celery -A synthorg_site beat -l "${LOG_LEVEL:-INFO}" \
      -s "${SYNTHORG_VAR_DIR:-/var/lib/synthorg}/beat-schedule"
    ;;
  migrate)
    python3 manage.py migrate --noinput
    exec python3 manage.py collectstatic --noinput -v0
    ;;
  manage)
    exec python3 manage.py "$@"
    ;;
  *)
    echo "synthorg: unknown role '$role'; allowed: web, worker [QUEUES], beat, migrate, manage ARGS" >&2
    exit 2
    ;;
esac
