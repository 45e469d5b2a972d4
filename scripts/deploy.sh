#!/usr/bin/env bash
# make deploy STAGE=<stage> [ORG="Acme"]: build, package and deploy the stack of one stage
# from the repository root, with the stage's settings from infra/samconfig.toml (no
# prompt), then print the API URL and, with ORG, create the first organization and its key
# through the deployed admin function and print the key (once: store it).
#
# Installs what is missing: the SAM CLI (aws-sam-cli, PyPI, with boto3) into .tools/deploy,
# and everything `make build` needs. Needs AWS credentials for the target account in the
# standard AWS configuration (AWS_PROFILE, AWS_REGION or a configured default region).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
STAGE="${STAGE:-${1:-}}"
SAM_CLI_VERSION="1.170.0"
DEPLOY="$ROOT/.tools/deploy"
say() { printf '[deploy] %s\n' "$*" >&2; }

[ -n "$STAGE" ] || { say "usage: make deploy STAGE=<stage> [ORG=\"name\"] (stages: infra/samconfig.toml)"; exit 2; }
grep -q "^\[$STAGE\.deploy\.parameters\]" infra/samconfig.toml || {
  say "no [$STAGE.deploy.parameters] in infra/samconfig.toml: add the stage there first"; exit 2; }

scripts/tools.sh --prerequisites
if [ ! -x "$DEPLOY/bin/sam" ]; then
  say "installing aws-sam-cli $SAM_CLI_VERSION from PyPI into .tools/deploy"
  python3 -m venv "$DEPLOY"
  "$DEPLOY/bin/pip" install -q --disable-pip-version-check "aws-sam-cli==$SAM_CLI_VERSION"
fi
export SAM_CLI_TELEMETRY=0

# Fails early, before the build, when there are no credentials or no region.
"$DEPLOY/bin/python" - <<'PY' >&2
import sys, boto3
s = boto3.session.Session()
if not s.region_name:
    sys.exit("[deploy] no AWS region: set AWS_REGION (or a profile with a region)")
try:
    who = s.client("sts").get_caller_identity()
except Exception as e:
    sys.exit(f"[deploy] no usable AWS credentials: {e}")
print(f"[deploy] account {who['Account']}, region {s.region_name}")
PY

scripts/build.sh
CONFIG="$ROOT/infra/samconfig.toml"
PACKAGED="$ROOT/target/infra/packaged-$STAGE.yaml"
mkdir -p "$(dirname "$PACKAGED")"
say "sam package (zips and template to SAM's managed bucket)"
"$DEPLOY/bin/sam" package --config-file "$CONFIG" --config-env "$STAGE" \
  --template-file "$ROOT/infra/template.yaml" --output-template-file "$PACKAGED"
say "sam deploy --config-env $STAGE"
"$DEPLOY/bin/sam" deploy --config-file "$CONFIG" --config-env "$STAGE" \
  --template-file "$PACKAGED" --no-progressbar

STACK="$(sed -n "/^\[$STAGE\.deploy\.parameters\]/,/^\[/s/^stack_name = \"\(.*\)\"/\1/p" "$CONFIG")"
"$DEPLOY/bin/python" - "$STACK" "${ORG:-}" <<'PY'
import json, sys, boto3
stack, org = sys.argv[1], sys.argv[2]
outputs = {o["OutputKey"]: o["OutputValue"] for o in
           boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]}
print(f"\nCatalog is deployed ({stack}).\n  API URL:  {outputs['ApiUrl']}")
if not org:
    print(f"  No organization created (ORG unset). The first one and its key:\n"
          f"    make deploy STAGE=... ORG=\"Acme\"   or   aws lambda invoke --function-name "
          f"{outputs['AdminFunctionName']} --cli-binary-format raw-in-base64-out "
          "--payload '{\"op\":\"bootstrap\",\"name\":\"Acme\"}' /dev/stdout")
    sys.exit(0)
answer = boto3.client("lambda").invoke(
    FunctionName=outputs["AdminFunctionName"],
    Payload=json.dumps({"op": "bootstrap", "name": org, "keyName": "first"}).encode(),
)
result = json.loads(answer["Payload"].read())
if "FunctionError" in answer or "error" in result:
    sys.exit(f"[deploy] creating organization {org!r} failed: {result}")
print(f"  Organization: {result['org']} ({result['name']})\n"
      f"  API key:  {result['key']}   (shown once: store it now)\n\n"
      f"  export CATALOG_BASE_URL={outputs['ApiUrl']} CATALOG_API_KEY={result['key']}\n"
      f"  curl -s \"$CATALOG_BASE_URL/products\" -H \"Authorization: Bearer $CATALOG_API_KEY\"")
PY
