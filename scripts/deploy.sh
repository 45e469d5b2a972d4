#!/usr/bin/env bash
# make deploy STAGE=<stage> [DIST=dist] [ORG="Acme"]: deploys the artifacts `make package`
# put into DIST (built here or by an earlier CI job) as the stack of one stage, with the
# stage's settings from infra/samconfig.toml (no prompt), then prints the API URL. With ORG,
# the first organization of the stage is created once: its key goes to an SSM SecureString
# parameter (/catalog/<stage>/first-organization), never to the output; a later run with
# ORG finds it there and creates nothing.
#
# Builds nothing and installs no build or test tool: it needs Python 3 (for the SAM CLI),
# `sam` and `aws` (taken from PATH, else installed from PyPI into .tools/deploy on first use)
# and AWS credentials for the stage's account. Before anything changes it refuses:
#   - a stage whose account_id (infra/samconfig.toml) is not the credentials' account;
#   - AWS_REGION or AWS_DEFAULT_REGION naming another region than the stage's `region`;
#   - a production stage whose alarms reach nobody (AlarmEmail and AlarmTopicArn empty);
#   - artifacts whose manifest does not match them.
# After the stack is deployed it reads the table's deletion protection (describe-table) and
# fails, naming the fix, when it is off.
# SAMCONFIG=<file> reads another configuration (the tests' copies).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
STAGE="${STAGE:-${1:-}}"
DIST="${DIST:-dist}"
CONFIG="${SAMCONFIG:-$ROOT/infra/samconfig.toml}"
SAM_CLI_VERSION="1.170.0"
AWS_CLI_VERSION="1.46.2"
TOOLS="$ROOT/.tools/deploy"
say() { printf '[deploy] %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

[ -n "$STAGE" ] || die "usage: make deploy STAGE=<stage> [DIST=dist] [ORG=\"name\"] (stages: infra/samconfig.toml)"
case "$DIST" in /*) ;; *) DIST="$ROOT/$DIST" ;; esac

# conf SECTION KEY: a value of infra/samconfig.toml, without its quotes.
conf() {
  awk -v section="[$STAGE.$1.parameters]" -v key="$2" '
    /^\[/ { inside = ($0 == section); next }
    inside && index($0, key " = ") == 1 { print substr($0, length(key) + 4); exit }' "$CONFIG" |
    sed -E 's/^"(.*)"$/\1/; s/\\"/"/g'
}
grep -q "^\[$STAGE\.deploy\.parameters\]" "$CONFIG" ||
  die "no [$STAGE.deploy.parameters] in $CONFIG: add the stage there first"

STACK="$(conf deploy stack_name)"
REGION="$(conf deploy region)"
ACCOUNT="$(conf catalog account_id)"
PRODUCTION="$(conf catalog production)"
OVERRIDES="$(conf deploy parameter_overrides)"
# override NAME: the value parameter_overrides gives NAME ("" when it says NAME=""), or
# nothing at all (exit 1) when it does not name it.
override() {
  local pair
  pair="$(printf '%s\n' "$OVERRIDES" | grep -oE "(^| )$1=\"[^\"]*\"" | head -n1)" || return 1
  pair="${pair# }"; pair="${pair#*=\"}"; printf '%s' "${pair%\"}"
}

# 1. What the stage pins: its region and its account.
[ -n "$REGION" ] && [ "$(conf package region)" = "$REGION" ] ||
  die "$STAGE: set the same region = \"...\" in [$STAGE.package.parameters] and [$STAGE.deploy.parameters]"
for var in AWS_REGION AWS_DEFAULT_REGION; do
  if [ -n "${!var:-}" ] && [ "${!var}" != "$REGION" ]; then
    die "$var is ${!var}, but stage $STAGE deploys to $REGION (infra/samconfig.toml): unset it or deploy another stage"
  fi
done
export AWS_REGION="$REGION" AWS_DEFAULT_REGION="$REGION"
[[ "$ACCOUNT" =~ ^[0-9]{12}$ ]] ||
  die "$STAGE: account_id in [$STAGE.catalog.parameters] is \"$ACCOUNT\": set the 12-digit account this stage deploys to"

# 2. Who the alarms reach: a decision every stage writes down, required of production.
EMAIL="$(override AlarmEmail)" && TOPIC="$(override AlarmTopicArn)" ||
  die "$STAGE: parameter_overrides must state AlarmEmail=\"...\" and AlarmTopicArn=\"...\" (either may be empty, not both for production)"
if [ "$PRODUCTION" = true ] && [ -z "$EMAIL" ] && [ -z "$TOPIC" ]; then
  die "$STAGE is a production stage and its alarms reach nobody: set AlarmEmail or AlarmTopicArn (an existing SNS topic) in its parameter_overrides"
fi
[ "$PRODUCTION" = true ] || [ "$PRODUCTION" = false ] ||
  die "$STAGE: production = true or false in [$STAGE.catalog.parameters]"

# 3. The artifacts, as make package left them.
[ -f "$DIST/template.yaml" ] && [ -f "$DIST/manifest.sha256" ] ||
  die "no package in $DIST: run make package first (or fetch the CI job's artifact into it)"
(cd "$DIST" && sha256sum --quiet -c manifest.sha256) >&2 ||
  die "$DIST does not match its manifest.sha256: package again"
say "artifacts $DIST ($(cat "$DIST/VERSION" 2>/dev/null || echo unknown))"

# 4. The tools: sam and aws from PATH, else installed once into .tools/deploy.
tool() {
  if command -v "$1" >/dev/null 2>&1; then command -v "$1"; return; fi
  local venv="$TOOLS/$1"
  if [ ! -x "$venv/bin/$1" ]; then
    say "installing $2 from PyPI into ${venv#"$ROOT"/}"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "$2" >&2
  fi
  printf '%s\n' "$venv/bin/$1"
}
SAM="$(tool sam "aws-sam-cli==$SAM_CLI_VERSION")"
AWS="$(tool aws "awscli==$AWS_CLI_VERSION")"
export SAM_CLI_TELEMETRY=0

# 5. The credentials' account must be the stage's.
WHO="$("$AWS" sts get-caller-identity --query Account --output text --region "$REGION")" ||
  die "no usable AWS credentials (aws sts get-caller-identity failed)"
[ "$WHO" = "$ACCOUNT" ] ||
  die "the credentials are of account $WHO, stage $STAGE deploys to $ACCOUNT (infra/samconfig.toml)"
say "stage $STAGE: account $ACCOUNT, region $REGION, stack $STACK"

# 6. A first create must be able to fail cleanly: the table is created without deletion
# protection (RetainExceptOnCreate deletes it on a rollback), which a second pass turns on;
# a stack left by a failed first create (ROLLBACK_COMPLETE, nothing retained) is removed.
ERR="$(mktemp)"
trap 'rm -f "$ERR"' EXIT
if STATUS="$("$AWS" cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" \
      --query 'Stacks[0].StackStatus' --output text 2>"$ERR")"; then
  :
elif grep -q "does not exist" "$ERR"; then
  STATUS=NONE
else
  cat "$ERR" >&2; die "cannot read the state of stack $STACK"
fi
if [ "$STATUS" = ROLLBACK_COMPLETE ]; then
  say "$STACK is ROLLBACK_COMPLETE (its first create failed and was rolled back): deleting it to create it again"
  "$AWS" cloudformation delete-stack --stack-name "$STACK" --region "$REGION"
  "$AWS" cloudformation wait stack-delete-complete --stack-name "$STACK" --region "$REGION"
  STATUS=NONE
fi
# A stack whose first change set was never executed has no resources yet.
[ "$STATUS" != REVIEW_IN_PROGRESS ] || STATUS=NONE

# 7. Package (zips to the stage's S3) and check that the result names nothing local.
PACKAGED="$DIST/packaged-$STAGE.yaml"
say "sam package: the zips and the template to S3 ($REGION)"
"$SAM" package --config-file "$CONFIG" --config-env "$STAGE" --region "$REGION" \
  --template-file "$DIST/template.yaml" --output-template-file "$PACKAGED" >&2
LOCAL="$(grep -nE '^ +CodeUri: ' "$PACKAGED" | grep -vE 'CodeUri: s3://' || true)"
[ -z "$LOCAL" ] || { say "the packaged template still names local files:"; printf '%s\n' "$LOCAL" >&2; exit 1; }

deploy() {
  "$SAM" deploy --config-file "$CONFIG" --config-env "$STAGE" --region "$REGION" \
    --template-file "$PACKAGED" --no-progressbar "$@" >&2
}
# Every pass but a first create's names TableDeletionProtection="true" itself: the SAM CLI
# keeps a parameter's previous value when neither the command nor samconfig names it, so a
# pass that left it out kept the first create's "false" for good.
PROTECTED="$OVERRIDES TableDeletionProtection=\"true\""
if [ "$STATUS" = NONE ]; then
  say "sam deploy: creating $STACK (table without deletion protection until it succeeds)"
  deploy --parameter-overrides "$OVERRIDES TableDeletionProtection=\"false\""
  say "sam deploy: turning on the table's deletion protection"
  deploy --parameter-overrides "$PROTECTED"
else
  say "sam deploy: updating $STACK ($STATUS)"
  deploy --parameter-overrides "$PROTECTED"
fi

output() {
  "$AWS" cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" \
    --query "Stacks[0].Outputs[?OutputKey=='$1'].OutputValue" --output text
}
# 8. What is true, read from the table itself, not from what was asked: a production table
# without deletion protection fails the deploy, loudly.
TABLE="$(output TableName)"
PROTECTION="$("$AWS" dynamodb describe-table --table-name "$TABLE" --region "$REGION" \
  --query Table.DeletionProtectionEnabled --output text)" ||
  die "cannot read table $TABLE (dynamodb:DescribeTable): its deletion protection is unknown"
if [ "$PROTECTION" != True ]; then
  say "FAILED: table $TABLE has NO deletion protection after this deploy (DeletionProtectionEnabled=$PROTECTION)."
  say "Anyone allowed dynamodb:DeleteTable can delete the catalog. Turn it on now:"
  say "  aws dynamodb update-table --region $REGION --table-name $TABLE --deletion-protection-enabled"
  die "then run make deploy STAGE=$STAGE again (it checks this after every pass)"
fi
say "table $TABLE: deletion protection on (checked with describe-table)"
API_URL="$(output ApiUrl)"
ADMIN="$(output AdminFunctionName)"
printf '\nCatalog is deployed (%s, %s).\n  API URL:  %s\n' "$STACK" "$REGION" "$API_URL"

# 9. The first organization, once per stage; its key only in SSM, encrypted.
PARAM="/catalog/$STAGE/first-organization"
FETCH="aws ssm get-parameter --region $REGION --name $PARAM --with-decryption --query Parameter.Value --output text"
if [ -z "${ORG:-}" ]; then
  printf '  No organization created (ORG unset). The first one: make deploy STAGE=%s ORG="Acme"\n' "$STAGE"
  exit 0
fi
WORK="$(mktemp -d)"
chmod 700 "$WORK"
trap 'rm -rf "$WORK" "$ERR"' EXIT
json() { python3 -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' "$@"; }
# The marker first: it exists from now on, so no later run creates a second organization.
json Name "$PARAM" Type SecureString Value pending \
  Description "catalog $STAGE: first organization $ORG, being created" > "$WORK/marker.json"
if ! "$AWS" ssm put-parameter --region "$REGION" --cli-input-json "file://$WORK/marker.json" \
    >/dev/null 2>"$ERR"; then
  if grep -q ParameterAlreadyExists "$ERR"; then
    printf '  The first organization of %s was created by an earlier deploy; nothing created now.\n' "$STAGE"
    printf '  Its key: %s\n' "$FETCH"
    printf '  (a value "pending" means that deploy stopped before storing it: see infra/README.md, "Organizations and keys")\n'
    exit 0
  fi
  cat "$ERR" >&2; die "cannot write SSM parameter $PARAM (ssm:PutParameter)"
fi
json op bootstrap name "$ORG" keyName first > "$WORK/payload.json"
if ! FAILED="$("$AWS" lambda invoke --region "$REGION" --function-name "$ADMIN" \
      --payload "fileb://$WORK/payload.json" --query FunctionError --output text \
      "$WORK/answer.json" 2>"$ERR")" || [ "$FAILED" != None ] ||
   ! python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); sys.exit("error" in a or "key" not in a)' \
      "$WORK/answer.json"; then
  "$AWS" ssm delete-parameter --region "$REGION" --name "$PARAM" >/dev/null 2>&1 || true
  cat "$ERR" >&2
  die "creating organization \"$ORG\" failed: $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("error", "no answer"))' "$WORK/answer.json" 2>/dev/null || echo 'no answer')"
fi
ORG_ID="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["org"])' "$WORK/answer.json")"
python3 - "$WORK/answer.json" "$PARAM" "$STAGE" > "$WORK/secret.json" <<'PY'
import json, sys
answer, name, stage = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
value = {k: answer[k] for k in ("org", "name", "keyId", "key", "scopes") if k in answer}
print(json.dumps({"Name": name, "Type": "SecureString", "Overwrite": True, "Value": json.dumps(value),
                  "Description": f"catalog {stage}: first organization {answer['org']} ({answer['name']}) and its key"}))
PY
if ! "$AWS" ssm put-parameter --region "$REGION" --cli-input-json "file://$WORK/secret.json" >/dev/null 2>"$ERR"; then
  cat "$ERR" >&2
  die "organization $ORG_ID ($ORG) was created, but its key could not be stored in $PARAM; it is not shown. Make a new key: aws lambda invoke --function-name $ADMIN with {\"op\":\"create-key\",\"org\":\"$ORG_ID\"} and store it yourself"
fi
printf '  Organization: %s (%s)\n' "$ORG_ID" "$ORG"
printf '  Its first API key (every scope) is in the SSM SecureString %s. Fetch it once:\n    %s\n' "$PARAM" "$FETCH"
