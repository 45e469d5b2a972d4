#!/usr/bin/env bash
# make deploy STAGE=<stage> [DIST=dist] [RELEASE=<version>] [ORG="Acme"]: deploys one release
# `make package` kept in DIST/releases/<version> (built here or by an earlier CI job) as the
# stack of one stage: the checked-out version's, or the one RELEASE names (a rollback), with
# the stage's settings from infra/samconfig.toml (no prompt), then prints the API URL. With ORG,
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
#   - no package of the checked-out version (git rev-parse HEAD) in DIST/releases, unless
#     RELEASE names the kept release to deploy instead; artifacts that do not match their
#     manifest, or whose VERSION is not their folder's;
#   - an account whose Lambda concurrency cannot hold what the stack reserves and its queue
#     consumers' MaximumConcurrency, plus the 100 Lambda keeps unreserved
#     (ALLOW_LOW_CONCURRENCY=1 makes this a warning).
# After the stack is deployed it reads the table's deletion protection (describe-table) and
# fails, naming the fix, when it is off.
# SAMCONFIG=<file> reads another configuration (the tests' copies).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
STAGE="${STAGE:-${1:-}}"
DIST="${DIST:-dist}"
RELEASE="${RELEASE:-}"
CONFIG="${SAMCONFIG:-$ROOT/infra/samconfig.toml}"
SAM_CLI_VERSION="1.170.0"
AWS_CLI_VERSION="1.46.2"
TOOLS="$ROOT/.tools/deploy"
say() { printf '[deploy] %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

[ -n "$STAGE" ] || die "usage: make deploy STAGE=<stage> [DIST=dist] [RELEASE=<version>] [ORG=\"name\"] (stages: infra/samconfig.toml)"
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

# 3. The release: the package of the checked-out version (scripts/version.sh: the commit, or
# the commit and a digest of uncommitted edits), so that checking out a release and
# deploying deploys that release; or the kept release RELEASE names (a rollback:
# infra/README.md, "Roll back"). Nothing else.
CHECKED_OUT="$(scripts/version.sh)"
# The kept releases, the newest package first.
kept() {
  local names
  names="$(find "$DIST"/releases/*/VERSION -maxdepth 0 -printf '%T@ %h\n' 2>/dev/null |
    sort -rn | sed -E 's#^[^ ]+ .*/##' | paste -sd' ' -)"
  printf '%s' "${names:-none}"
}
if [ -n "$RELEASE" ]; then
  [[ "$RELEASE" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || die "RELEASE=$RELEASE is not a version (a folder name of $DIST/releases)"
  VERSION="$RELEASE"
  [ -d "$DIST/releases/$VERSION" ] ||
    die "no release $VERSION in $DIST/releases (kept, newest first: $(kept)): check it out and run make package, or fetch its CI artifact into $DIST"
elif [ "$CHECKED_OUT" = unknown ]; then
  die "cannot tell the checked-out version (git rev-parse HEAD failed): name the release to deploy, RELEASE=<version> (kept, newest first: $(kept))"
else
  VERSION="$CHECKED_OUT"
  [ -d "$DIST/releases/$VERSION" ] ||
    die "no package of the checked-out version $VERSION in $DIST/releases (kept, newest first: $(kept)): run make package first (or fetch the CI job's artifact into $DIST), or name a kept release to deploy: RELEASE=<version>"
fi
REL="$DIST/releases/$VERSION"
[ -f "$REL/template.yaml" ] && [ -f "$REL/manifest.sha256" ] ||
  die "$REL holds no package (template.yaml, manifest.sha256): run make package again"
(cd "$REL" && sha256sum --quiet -c manifest.sha256) >&2 ||
  die "$REL does not match its manifest.sha256: package again"
PACKAGED_VERSION="$(cat "$REL/VERSION" 2>/dev/null || true)"
[ "$PACKAGED_VERSION" = "$VERSION" ] ||
  die "$REL holds the package of version ${PACKAGED_VERSION:-unknown}, not $VERSION: package $VERSION again"
if [ "$VERSION" = "$CHECKED_OUT" ] && [ "$CHECKED_OUT" != unknown ]; then
  say "release $VERSION (the checked-out version), from $REL"
else
  say "release $VERSION, NOT the checked-out version $CHECKED_OUT: deploying it because RELEASE names it"
fi

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

# 6. The stack's state: none yet, left by a failed first create, or deployed.
ERR="$(mktemp)"
# Temporary files, removed however the script ends.
TEMPS=("$ERR")
trap 'rm -rf "${TEMPS[@]}"' EXIT
if STATUS="$("$AWS" cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" \
      --query 'Stacks[0].StackStatus' --output text 2>"$ERR")"; then
  :
elif grep -q "does not exist" "$ERR"; then
  STATUS=NONE
else
  cat "$ERR" >&2; die "cannot read the state of stack $STACK"
fi

# 7. The account's Lambda concurrency must hold the stack: what its functions reserve
# (ReservedConcurrentExecutions, ProvisionedConcurrentExecutions), what its queue consumers
# may run at once (MaximumConcurrency), and the 100 Lambda keeps unreserved (it refuses a
# reservation below that). On an update the functions already hold what the deployed
# stack reserves (read from its own template and parameters, not the release's: a release
# that reserves more needs the difference unreserved). Before anything changes.
# concurrency TEMPLATE OVERRIDES: "<reserved> <queue consumers> <parameter digest>".
concurrency() {
  python3 - "$1" "$2" <<'PY'
import hashlib, json, re, sys

path, overrides = sys.argv[1], sys.argv[2]
given = dict(re.findall(r'(\w+)="([^"]*)"', overrides))
KEYS = ("ReservedConcurrentExecutions", "ProvisionedConcurrentExecutions", "MaximumConcurrency")
defaults, functions, found = {}, {}, []  # found: (section, resource, key, raw value, line)
section = resource = param = pending = None
for number, line in enumerate(open(path).read().split("\n"), 1):
    if not line.strip() or line.lstrip().startswith("#"):
        continue
    top = re.match(r"^(\w+):", line)
    if top:
        section, resource, param, pending = top.group(1), None, None, None
        continue
    entry = re.match(r"^  (\w+):\s*$", line)
    if entry:
        resource = param = entry.group(1)
        pending = None
        continue
    if section == "Parameters" and param:
        default = re.match(r"^    Default:\s*(.*?)\s*$", line)
        if default:
            defaults[param] = default.group(1).strip("\"'")
    if section == "Resources" and resource:
        kind = re.match(r"^    Type:\s*(\S+)", line)
        if kind:
            functions[resource] = kind.group(1) == "AWS::Serverless::Function"
    # A key of a block mapping (the line starts with it) or of a flow one ({Key: value}).
    for key, raw in re.findall(r"(?:^\s*(?:-\s+)?|[{,]\s*)(%s)\s*:\s*(!Ref\s+\w+|\"[^\"]*\"|'[^']*'|[^\s,}#]+)" % "|".join(KEYS), line):
        found.append((section, resource, key, raw, number))
    # The long form `sam package` writes a deployed template in: "Key:", then "  Ref: P".
    bare = re.match(r"^\s*(?:-\s+)?(%s)\s*:\s*$" % "|".join(KEYS), line)
    if bare:
        pending = (section, resource, bare.group(1), number)
        continue
    ref = re.match(r"^\s*Ref\s*:\s*(\w+)\s*$", line)
    if ref and pending:
        s, r, key, at = pending
        found.append((s, r, key, "!Ref " + ref.group(1), at))
    pending = None
values = {**defaults, **given}

def number(raw, at):
    ref = re.match(r"^!Ref\s+(\w+)$", raw)
    text = values.get(ref.group(1), "") if ref else raw.strip("\"'")
    if not text.isdigit():
        sys.exit(f"cannot compute {raw} (line {at} of the template): concurrency must be a number or !Ref of a parameter")
    return int(text)

reserved = consumers = 0
for section, resource, key, raw, at in found:
    n = number(raw, at)
    if key == "MaximumConcurrency":
        consumers += n
    elif section == "Globals":
        # Every serverless function without its own setting takes the global one.
        own = {r for s, r, k, _, _ in found if s == "Resources" and k == key}
        reserved += n * sum(1 for r, serverless in functions.items() if serverless and r not in own)
    else:
        reserved += n
# Every parameter's value as this deploy passes it (ParameterDigest of infra/template.yaml,
# which every sam deploy below passes): a change publishes new function versions. Not the
# table's protection, which a first create passes with two values and no function reads.
digested = {k: v for k, v in values.items() if k not in ("ParameterDigest", "TableDeletionProtection")}
digest = hashlib.sha256(json.dumps(digested, sort_keys=True).encode()).hexdigest()
print(reserved, consumers, digest)
PY
}
NEEDS="$(concurrency "$REL/template.yaml" "$OVERRIDES")" ||
  die "cannot read the concurrency $STACK needs from $REL/template.yaml (above)"
read -r RESERVED CONSUMERS DIGEST <<<"$NEEDS"
SETTINGS="$("$AWS" lambda get-account-settings --region "$REGION" --output text \
  --query '[AccountLimit.ConcurrentExecutions,AccountLimit.UnreservedConcurrentExecutions]')" ||
  die "cannot read the account's Lambda concurrency (lambda:GetAccountSettings)"
read -r LIMIT UNRESERVED <<<"$SETTINGS"
[[ "$LIMIT" =~ ^[0-9]+$ && "$UNRESERVED" =~ ^[0-9]+$ ]] ||
  die "unexpected answer of lambda get-account-settings: $SETTINGS"
NEED=$((RESERVED + CONSUMERS + 100))
AVAILABLE="$UNRESERVED"
HELD=""
if [ "$STATUS" != NONE ] && [ "$STATUS" != ROLLBACK_COMPLETE ] && [ "$STATUS" != REVIEW_IN_PROGRESS ]; then
  DEPLOYED="$(mktemp)"
  TEMPS+=("$DEPLOYED")
  "$AWS" cloudformation get-template --stack-name "$STACK" --region "$REGION" \
    --template-stage Original --query TemplateBody --output text > "$DEPLOYED" ||
    die "cannot read the template $STACK runs (cloudformation:GetTemplate)"
  DEPLOYED_PARAMETERS="$("$AWS" cloudformation describe-stacks --stack-name "$STACK" --region "$REGION" \
    --query 'Stacks[0].Parameters[].[ParameterKey,ParameterValue]' --output text)" ||
    die "cannot read the parameters $STACK runs with"
  HELD_NEEDS="$(concurrency "$DEPLOYED" "$(printf '%s\n' "$DEPLOYED_PARAMETERS" |
    awk -F'\t' 'NF == 2 { printf "%s=\"%s\" ", $1, $2 }')")" ||
    die "cannot read the concurrency the deployed $STACK reserves (above)"
  read -r HELD_RESERVED _ <<<"$HELD_NEEDS"
  AVAILABLE=$((UNRESERVED + HELD_RESERVED))
  [ "$HELD_RESERVED" = 0 ] || HELD=" + $HELD_RESERVED its functions already reserve"
fi
SHORT="account $ACCOUNT ($REGION) has $AVAILABLE of its Lambda concurrency available ($UNRESERVED unreserved of $LIMIT$HELD), $STACK needs $NEED ($RESERVED reserved by its functions + $CONSUMERS for its queue consumers' MaximumConcurrency + 100 that Lambda keeps unreserved)"
if [ "$NEED" -gt "$AVAILABLE" ]; then
  WANT=$((LIMIT + NEED - AVAILABLE)); [ "$WANT" -ge 1000 ] || WANT=1000
  say "not enough Lambda concurrency: $SHORT"
  say "  request more (Service Quotas, Lambda \"Concurrent executions\"): aws service-quotas request-service-quota-increase --region $REGION --service-code lambda --quota-code L-B99A9384 --desired-value $WANT"
  [ "${ALLOW_LOW_CONCURRENCY:-}" = 1 ] ||
    die "refused before any change; ALLOW_LOW_CONCURRENCY=1 deploys anyway (the queue consumers and the API then share too little, and a reservation beyond what is unreserved fails the deploy)"
  say "WARNING: deploying anyway (ALLOW_LOW_CONCURRENCY=1)"
else
  say "Lambda concurrency: $SHORT"
fi

# 8. A first create must be able to fail cleanly: the table is created without deletion
# protection (RetainExceptOnCreate deletes it on a rollback), which a second pass turns on;
# a stack left by a failed first create (ROLLBACK_COMPLETE, nothing retained) is removed.
if [ "$STATUS" = ROLLBACK_COMPLETE ]; then
  say "$STACK is ROLLBACK_COMPLETE (its first create failed and was rolled back): deleting it to create it again"
  "$AWS" cloudformation delete-stack --stack-name "$STACK" --region "$REGION"
  "$AWS" cloudformation wait stack-delete-complete --stack-name "$STACK" --region "$REGION"
  STATUS=NONE
fi
# A stack whose first change set was never executed has no resources yet.
[ "$STATUS" != REVIEW_IN_PROGRESS ] || STATUS=NONE

# 9. Package (zips to the stage's S3) and check that the result names nothing local.
PACKAGED="$REL/packaged-$STAGE.yaml"
say "sam package: the zips and the template to S3 ($REGION)"
"$SAM" package --config-file "$CONFIG" --config-env "$STAGE" --region "$REGION" \
  --template-file "$REL/template.yaml" --output-template-file "$PACKAGED" >&2
LOCAL="$(grep -nE '^ +CodeUri: ' "$PACKAGED" | grep -vE 'CodeUri: s3://' || true)"
[ -z "$LOCAL" ] || { say "the packaged template still names local files:"; printf '%s\n' "$LOCAL" >&2; exit 1; }

deploy() {
  "$SAM" deploy --config-file "$CONFIG" --config-env "$STAGE" --region "$REGION" \
    --template-file "$PACKAGED" --no-progressbar "$@" >&2
}
# Every pass but a first create's names TableDeletionProtection="true" itself: the SAM CLI
# keeps a parameter's previous value when neither the command nor samconfig names it, so a
# pass that left it out kept the first create's "false" for good. ParameterDigest (step 7)
# makes a changed parameter publish new function versions, which the live aliases then
# shift to gradually (infra/README.md, "Gradual deployment").
OVERRIDES="$OVERRIDES ParameterDigest=\"$DIGEST\""
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
# 10. What is true, read from the table itself, not from what was asked: a production table
# without deletion protection fails the deploy, loudly.
TABLE="$(output TableName)" || die "cannot read the stack's TableName output (cloudformation:DescribeStacks)"
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

# 11. The first organization, once per stage; its key only in SSM, encrypted.
PARAM="/catalog/$STAGE/first-organization"
FETCH="aws ssm get-parameter --region $REGION --name $PARAM --with-decryption --query Parameter.Value --output text"
if [ -z "${ORG:-}" ]; then
  printf '  No organization created (ORG unset). The first one: make deploy STAGE=%s ORG="Acme"\n' "$STAGE"
  exit 0
fi
WORK="$(mktemp -d)"
chmod 700 "$WORK"
TEMPS+=("$WORK")
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
# Through the live alias, as every other invocation (its ErrorsAlarm watches the alias).
if ! FAILED="$("$AWS" lambda invoke --region "$REGION" --function-name "$ADMIN" --qualifier live \
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
  die "organization $ORG_ID ($ORG) was created, but its key could not be stored in $PARAM; it is not shown. Make a new key: aws lambda invoke --function-name $ADMIN --qualifier live with {\"op\":\"create-key\",\"org\":\"$ORG_ID\"} and store it yourself"
fi
printf '  Organization: %s (%s)\n' "$ORG_ID" "$ORG"
printf '  Its first API key (every scope) is in the SSM SecureString %s. Fetch it once:\n    %s\n' "$PARAM" "$FETCH"
