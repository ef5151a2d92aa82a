#!/usr/bin/env bash
# The system packages the arena needs beyond Python packages, for `make run` (`run`) or for
# `make test` (`test`): bubblewrap and libseccomp2 (the sandbox uploaded bots run in; the
# arena refuses to run them without it), and for the tests also node (the JavaScript example
# bot), g++ with the static C and C++ libraries (the C++ starter kit, built static) and chromium (the web pages' browser tests drive Debian's Chromium through Playwright;
# they fail without it when CI=true), and systemd (systemd-analyze, for the deploy units).
# Installs what is missing with apt when running as root; otherwise says what to do.
set -euo pipefail

mode=${1:-run}
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
libs=$(/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true)
[[ $libs == *libseccomp.so.2* ]] || need+=(libseccomp2)
if [[ $mode == test ]]; then
  command -v node >/dev/null 2>&1 || need+=(nodejs)
  command -v g++ >/dev/null 2>&1 || need+=(g++)
  [[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
  [[ -x /usr/bin/chromium ]] || need+=(chromium)
  # systemd-analyze verify reads deploy/systemd's units (tests/deploy/test_validators.py).
  command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
fi

if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  elif [[ $mode == test ]]; then
    echo "missing system packages: ${need[*]} (install them, or the tests that need them skip)" >&2
  else
    echo "missing system packages: ${need[*]}: install them (the sandbox needs them)," \
      "or run with COW006_SANDBOX=off for bots you trust" >&2
  fi
fi
