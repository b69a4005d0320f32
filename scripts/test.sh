#!/usr/bin/env bash
# Start private PostgreSQL, Redis and Docker engines under a temporary directory, build the
# sandbox image, then run lint and the whole suite (or, with `bench`, the benchmarks).
# Everything started here is stopped on the way out, on failure too.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}
root_dir=$(pwd)
venv="$root_dir/.venv/bin"

run_dir=$(mktemp -d /tmp/synthorg-test.XXXXXX)
chmod 755 "$run_dir"
pids=()
cleanup() {
  status=$?
  set +e
  if [ -n "${DOCKER_HOST:-}" ] && [ -S "$run_dir/docker.sock" ]; then
    docker ps -aq --filter label=synthorg.managed=true 2>/dev/null | xargs -r docker rm -f >/dev/null 2>&1
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
  done
  [ -f "$run_dir/pgdata/postmaster.pid" ] && as_pg "$pg_bin/pg_ctl" -D "$run_dir/pgdata" -m immediate stop >/dev/null 2>&1
  umount "$run_dir"/docker-exec/*/* 2>/dev/null
  rm -rf "$run_dir" 2>/dev/null
  exit $status
}
trap cleanup EXIT INT TERM

export SYNTHORG_ENV=test
export SYNTHORG_VAR_DIR="$run_dir/var"
export SYNTHORG_TEST_RUN_DIR="$run_dir"
export SYNTHORG_EXTRA_TOOL_MODULES=tests.support.tools

say() { echo "== $*"; }
# Every console, worker and command the tests start reads bytecode instead of compiling.
scripts/compile-bytecode.sh
# Test modules run in this many processes side by side (pytest-xdist), each with its own
# Redis, var/ and test database; a module stays whole in one of them. Three on two
# cores: most of the suite's time is spent waiting (for people, sandboxes, restarts).
workers=${SYNTHORG_TEST_WORKERS:-3}
missing() { # a required part is missing: fail, unless the user allowed skips
  if [ "${SYNTHORG_TEST_ALLOW_SKIP:-0}" = 1 ]; then
    echo "!! $1: tests that need it will be skipped (SYNTHORG_TEST_ALLOW_SKIP=1)" >&2
  else
    echo "!! $1" >&2; exit 1
  fi
}

# --- PostgreSQL: a private cluster on a unix socket (initdb refuses root: run as postgres).
pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/postgres 2>/dev/null | sort -V | tail -1)" 2>/dev/null || true)
[ -x "$pg_bin/postgres" ] || pg_bin=$(dirname "$(command -v postgres || echo /nonexistent/postgres)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [ -x "$pg_bin/postgres" ]; then
  mkdir -p "$run_dir/pgdata" "$run_dir/pgsock"
  pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  touch "$run_dir/pg.log"
  [ "$(id -u)" = 0 ] && chown postgres "$run_dir/pgdata" "$run_dir/pgsock" "$run_dir/pg.log"
  as_pg "$pg_bin/initdb" -D "$run_dir/pgdata" -U synthorg --auth=trust -E UTF8 >/dev/null
  as_pg "$pg_bin/pg_ctl" -D "$run_dir/pgdata" -l "$run_dir/pg.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $run_dir/pgsock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=800" start >/dev/null
  export DATABASE_URL="postgres://synthorg@127.0.0.1:$pg_port/synthorg"
  as_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U synthorg synthorg
  say "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$pg_port"
else
  missing "PostgreSQL is not installed (apt-get install postgresql)"
fi

# --- Redis: a private server on a unix socket.
if command -v redis-server >/dev/null; then
  redis-server --port 0 --unixsocket "$run_dir/redis.sock" --unixsocketperm 777 --save "" \
    --appendonly no --dir "$run_dir" --loglevel warning --databases 16 > "$run_dir/redis.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -S "$run_dir/redis.sock" ] && break; sleep 0.1; done
  export REDIS_URL="unix://$run_dir/redis.sock?db=0"
  # One more server per pytest worker (tests/support/shard.py points each at its own).
  for n in $(seq 0 $((workers - 1))); do
    redis-server --port 0 --unixsocket "$run_dir/redis-gw$n.sock" --unixsocketperm 777 --save "" \
      --appendonly no --dir "$run_dir" --loglevel warning --databases 16 > "$run_dir/redis-gw$n.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 1 100); do [ -S "$run_dir/redis-gw$n.sock" ] && break; sleep 0.1; done
  done
  say "Redis on $run_dir/redis.sock (and one per pytest worker: $workers)"
else
  missing "redis-server is not installed (apt-get install redis-server)"
fi

# --- Docker: a private engine with its own data root and socket.
if command -v dockerd >/dev/null; then
  mkdir -p "$run_dir/docker-data" "$run_dir/docker-exec"
  dockerd --data-root "$run_dir/docker-data" --exec-root "$run_dir/docker-exec" \
    --host "unix://$run_dir/docker.sock" --pidfile "$run_dir/docker.pid" \
    --iptables=false --ip6tables=false --bridge=none > "$run_dir/dockerd.log" 2>&1 &
  pids+=($!)
  export DOCKER_HOST="unix://$run_dir/docker.sock"
  for _ in $(seq 1 150); do docker version >/dev/null 2>&1 && break; sleep 0.2; done
  if docker version >/dev/null 2>&1; then
    say "Docker engine $(docker version -f '{{.Server.Version}}') on $run_dir/docker.sock"
    if [ -f tools_app/management/commands/synthorg_sandbox.py ] && [ "$what" != pytest ]; then
      say "building the sandbox image"
      "$venv/python" manage.py synthorg_sandbox build-image
    fi
    if [ -f tools_app/management/commands/synthorg_sandbox.py ] && [ "$what" = test ]; then
      # The browser and desktop image (about a minute on a clean cache, mostly apt and the
      # import) is built while lint runs; pytest waits for it.
      say "building the GUI sandbox image in the background"
      "$venv/python" manage.py synthorg_sandbox build-image --gui > "$run_dir/gui-image.log" 2>&1 &
      gui_image_pid=$!
      pids+=($gui_image_pid)
    fi
  else
    tail -20 "$run_dir/dockerd.log" >&2
    missing "the Docker engine did not start"
  fi
else
  missing "dockerd is not installed (apt-get install docker.io)"
fi

command -v bwrap >/dev/null || missing "bubblewrap is not installed (apt-get install bubblewrap)"

# --- An OpenID provider for the single sign-on tests (panva's oidc-provider, from npm, once).
oidc_version=8.8.1
oidc_dir="${XDG_CACHE_HOME:-$HOME/.cache}/synthorg/oidc-provider-$oidc_version"
if [ ! -f "$oidc_dir/node_modules/oidc-provider/package.json" ] && command -v npm >/dev/null; then
  mkdir -p "$oidc_dir" && echo '{"private": true}' > "$oidc_dir/package.json"
  (cd "$oidc_dir" && npm install --no-audit --no-fund --loglevel=error "oidc-provider@$oidc_version" >/dev/null) \
    || missing "npm could not install oidc-provider@$oidc_version"
fi
if [ -f "$oidc_dir/node_modules/oidc-provider/package.json" ]; then
  export SYNTHORG_TEST_OIDC_PROVIDER_DIR="$oidc_dir"
else
  missing "oidc-provider is not installed (npm, Node.js 18 or later)"
fi
command -v chromium >/dev/null || missing "Chromium is not installed (apt-get install chromium)"
for desktop_program in Xvfb xdotool scrot xterm; do
  command -v "$desktop_program" >/dev/null \
    || missing "$desktop_program is not installed (apt-get install xvfb xdotool scrot xterm)"
done


if [ "$what" = exec ]; then  # run any command inside this environment: scripts/test.sh exec CMD
  "${@:2}"
  exit 0
fi

if [ "$what" = bench ]; then
  "$venv/python" bench/run.py "${@:2}"
  exit 0
fi

if [ "$what" = pytest ]; then  # iterate on a few tests without lint: scripts/test.sh pytest ARGS
  "$venv/python" -m pytest -p no:cacheprovider -p tests.support.shard "${@:2}"
  exit 0
fi

say "ruff"
"$venv/ruff" check .
"$venv/ruff" format --check .
# The type and import checks take a core for a minute or two on a clean checkout; the
# tests leave part of the machine idle while they wait, so they run side by side. What
# they say is printed after the tests, and either failing fails the run.
say "mypy and import-linter, beside the tests (their report follows the tests')"
( "$venv/mypy" . && "$venv/lint-imports" --no-cache ) > "$run_dir/lint.log" 2>&1 &
lint_pid=$!
pids+=($lint_pid)
if [ -n "${gui_image_pid:-}" ]; then
  wait "$gui_image_pid" || { cat "$run_dir/gui-image.log" >&2; echo "!! the GUI sandbox image did not build" >&2; exit 1; }
  say "$(tail -1 "$run_dir/gui-image.log")"
fi
say "pytest"
tests_status=0
"$venv/python" -m pytest -p no:cacheprovider -p tests.support.shard -n "$workers" --dist loadfile \
  --durations=40 "${@:2}" || tests_status=$?
lint_status=0
wait "$lint_pid" || lint_status=$?
say "mypy and import-linter"
cat "$run_dir/lint.log"
[ "$lint_status" = 0 ] || { echo "!! mypy or import-linter failed (above)" >&2; exit "$lint_status"; }
exit "$tests_status"
