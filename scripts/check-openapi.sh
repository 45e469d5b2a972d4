#!/usr/bin/env bash
# Validates docs/openapi.yaml as an OpenAPI 3.1 document with openapi-spec-validator, and
# installs schemathesis for tests/tests/contract.rs (both PyPI, pinned, into .tools/openapi
# on first use). The file itself is generated from the route tables (`catalog-admin
# openapi`); tests/tests/consistency.rs keeps it current.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.tools/openapi
VALIDATOR_VERSION="0.9.0"
SCHEMATHESIS_VERSION="4.32.5"
if [ ! -x "$VENV/bin/openapi-spec-validator" ] || [ ! -x "$VENV/bin/schemathesis" ]; then
  echo "[openapi] installing openapi-spec-validator==$VALIDATOR_VERSION and schemathesis==$SCHEMATHESIS_VERSION from PyPI into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check \
    "openapi-spec-validator==$VALIDATOR_VERSION" "schemathesis==$SCHEMATHESIS_VERSION"
fi
"$VENV/bin/openapi-spec-validator" --schema 3.1.0 docs/openapi.yaml
