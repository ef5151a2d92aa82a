#!/usr/bin/env bash
# What `make run` needs beyond Python packages: bubblewrap and libseccomp2, the sandbox that
# uploaded bots run in (the arena refuses to run them without it).  Installs them with apt
# when running as root; otherwise says what to do.
set -euo pipefail

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
libs=$(/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null || true)
[[ $libs == *libseccomp.so.2* ]] || need+=(libseccomp2)

if ((${#need[@]})); then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "missing system packages: ${need[*]}: install them (the sandbox needs them)," \
      "or run with COW006_SANDBOX=off for bots you trust" >&2
  fi
fi
