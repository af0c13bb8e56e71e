#!/bin/sh
# Installs the e2e tests' npm dependencies (openai, ws) from package-lock.json when node_modules is
# missing or was installed from a different lock file. Usage: tests/e2e/install.sh
set -eu
cd "$(dirname "$0")"
stamp=node_modules/.parley-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d node_modules/openai ] && [ -d node_modules/ws ]; then
  exit 0
fi
npm ci --no-audit --no-fund
echo "$want" > "$stamp"
