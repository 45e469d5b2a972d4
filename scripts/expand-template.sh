#!/usr/bin/env bash
# Expands infra/template.yaml offline the way a deploy sees it: what `sam package` does to
# the code paths, then aws-sam-translator's transform of the SAM resources into plain
# CloudFormation (the HttpApi's routes become an OpenAPI body, functions their permissions).
# scripts/lint-template.sh lints the result; the consistency tests read it.
# Installs aws-sam-translator, cfn-lint and checkov (PyPI) into .tools/lint on first use.
# Usage: scripts/expand-template.sh [TEMPLATE] [OUT]
#        (defaults infra/template.yaml, target/infra/template.expanded.json)
set -euo pipefail
cd "$(dirname "$0")/.."
LINT=.tools/lint
SAM_TRANSLATOR_VERSION="1.115.0"
CFN_LINT_VERSION="1.58.0"
CHECKOV_VERSION="3.3.30"
if [ ! -x "$LINT/bin/checkov" ] || [ ! -x "$LINT/bin/cfn-lint" ]; then
  echo "[lint] installing aws-sam-translator, cfn-lint and checkov from PyPI into $LINT" >&2
  python3 -m venv "$LINT"
  "$LINT/bin/pip" install -q --disable-pip-version-check \
    "aws-sam-translator==$SAM_TRANSLATOR_VERSION" "cfn-lint==$CFN_LINT_VERSION" "checkov==$CHECKOV_VERSION"
fi
OUT="${2:-target/infra/template.expanded.json}"
mkdir -p "$(dirname "$OUT")"
AWS_DEFAULT_REGION=us-east-1 "$LINT/bin/python" - "${1:-infra/template.yaml}" "$OUT" <<'PY'
import json, logging, sys
# the translator warns once per function about a feature flag it cannot look up offline
logging.disable(logging.WARNING)
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicies:
    """The template names no managed policies; nothing to look up in IAM."""
    def load(self):
        return {}

with open(sys.argv[1]) as f:
    template = yaml_parse(f.read())
# What `sam package` does: local code paths become S3 locations.
for name, r in template["Resources"].items():
    code = r.get("Properties", {}).get("CodeUri")
    if isinstance(code, str) and not code.startswith("s3://"):
        r["Properties"]["CodeUri"] = f"s3://catalog-artifacts/{name}.zip"
expanded = transform(template, {}, NoManagedPolicies())
with open(sys.argv[2], "w") as f:
    json.dump(expanded, f, indent=1, default=str)
kinds = sorted({r["Type"] for r in expanded["Resources"].values()})
print(f"[lint] expanded {len(expanded['Resources'])} resources: {', '.join(kinds)}")
PY
