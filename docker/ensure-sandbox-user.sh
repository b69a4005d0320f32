#!/bin/sh
# Create the unprivileged system user sandboxed commands run as when the
# worker runs as root. Idempotent. uid/gid 10001 match the user inside the
# sandbox image, so one workspace grant serves all three backends.
#
# usage: ensure-sandbox-user.sh [NAME] [UID]
set -eu
name="${1:-synthorg-sandbox}"
uid="${2:-10001}"

if id "$name" >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-sandbox-user: must run as root to create user $name" >&2
    exit 1
fi
# Fall back to a system-chosen id when 10001 is taken by someone else.
if getent passwd "$uid" >/dev/null 2>&1 || getent group "$uid" >/dev/null 2>&1; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$name"
else
    groupadd --system --gid "$uid" "$name"
    useradd --system --uid "$uid" --gid "$uid" --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$name"
fi
echo "ensure-sandbox-user: created $name ($(id "$name"))"
