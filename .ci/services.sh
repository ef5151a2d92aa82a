#!/usr/bin/env bash
# CI's services: PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379), which the tests
# require when COW006_REQUIRE_SERVICES=1.  Each one that does not answer is started, then
# waited for (at most 30 s); a machine without them gets one line saying so.
set -euo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {
  local port=$1 name=$2
  for _ in $(seq 60); do
    up "$port" && return 0
    sleep 0.5
  done
  echo "$name did not come up on 127.0.0.1:$port" >&2
  return 1
}

if ! up 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [[ -d /etc/postgresql ]]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    wait_for 5432 PostgreSQL
  else
    echo "PostgreSQL is not running and not installed here" >&2
  fi
fi
if ! up 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" \
      --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
    wait_for 6379 Redis
  else
    echo "Redis is not running and not installed here" >&2
  fi
fi
