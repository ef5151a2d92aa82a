#!/usr/bin/env bash
# What the tests need beyond Python packages: node (for the JavaScript example bot),
# bubblewrap with libseccomp2 (the sandbox; tests/hostile fails without it when
# COW006_REQUIRE_SANDBOX=1, as in CI), and chromium (the web pages' browser tests drive
# Debian's Chromium through Playwright; they fail without it when CI=true).
# Installs missing system packages with apt when running as root; otherwise says what to do.
set -euo pipefail

need=()
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[[ -x /usr/bin/chromium ]] || need+=(chromium)
libs=$(/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true)
[[ $libs == *libseccomp.so.2* ]] || need+=(libseccomp2)

if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing system packages: ${need[*]} (install them, or the tests that need them skip)" >&2
  fi
fi
