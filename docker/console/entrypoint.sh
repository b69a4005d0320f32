#!/bin/sh
# The console image's entry point: one role per container.
#   web                 daphne on $HOST:$PORT (behind the proxy)
#   worker [QUEUES]     a Celery worker for QUEUES (comma-separated; default $SYNTHORG_QUEUES,
#                       else every queue), supervising $SYNTHORG_WORKER_CALLS calls at once
#   beat                the one Celery beat of the cluster
#   migrate             apply migrations and collect static files (once per release)
#   manage ARGS...      any manage.py command (synthorg_audit verify, synthorg_user, ...)
#   healthcheck         a web container's health: 0 when its /healthz answers 200
set -eu
cd /opt/synthorg/app
role="${1:-web}"
[ $# -gt 0 ] && shift
case "$role" in
  web)
    # Without --proxy-headers: the client address is read from X-Forwarded-For only as
    # written by the proxies in SYNTHORG_TRUSTED_PROXIES (daphne would believe anyone).
    exec python3 -m daphne -b "${HOST:-0.0.0.0}" -p "${PORT:-8000}" \
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
  healthcheck)
    # Asked by a name ALLOWED_HOSTS accepts (a bare 127.0.0.1 is refused as a foreign
    # host) and, behind a TLS proxy, as HTTPS (never redirected).
    exec python3 -I -S -c '
import os, sys, urllib.error, urllib.request
hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
host = next((h.lstrip(".") for h in hosts if h != "*"), "localhost")
headers = {"Host": host}
if os.environ.get("SECURE_PROXY_SSL_HEADER", "").lower() in ("1", "true", "yes", "on"):
    headers["X-Forwarded-Proto"] = "https"
url = "http://127.0.0.1:%s/healthz" % os.environ.get("PORT", "8000")
try:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=4) as r:
        sys.exit(0 if r.status == 200 else 1)
except (urllib.error.URLError, OSError) as exc:
    print("healthcheck: %s" % exc, file=sys.stderr)
    sys.exit(1)
'
    ;;
  *)
    echo "synthorg: unknown role '$role'; allowed: web, worker [QUEUES], beat, migrate, manage ARGS, healthcheck" >&2
    exit 2
    ;;
esac
