#!/usr/bin/env bash
# Lints infra/template.yaml the way a deploy sees it: aws-sam-translator expands the SAM
# resources offline (cfn-lint alone no longer looks inside them), then cfn-lint must report
# zero errors and zero warnings, checkov's CloudFormation checks must pass (each skip is
# justified in the template), and no IAM statement may use `*` in an action or resource
# other than the log-stream suffix of a function's own log group, the import files' prefix
# of the import bucket, the checkpoints' prefix of the checkpoint bucket, and X-Ray's two
# write actions, which take no resource but `*`.
# Installs the linters (PyPI) into .tools/lint on first use (scripts/expand-template.sh).
# Usage: scripts/lint-template.sh [TEMPLATE]   (default infra/template.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/infra/template.expanded.json
scripts/expand-template.sh "${1:-infra/template.yaml}" "$OUT"
LINT=.tools/lint
echo "[lint] cfn-lint (errors and warnings fail)"
"$LINT/bin/cfn-lint" --non-zero-exit-code warning -- "$OUT"
echo "[lint] checkov (CloudFormation checks)"
# Accepted findings, each explained in infra/README.md ("Security checks"):
#   CKV_AWS_115 reserved concurrency: limits scaling; set per deployment when wanted
#   CKV_AWS_116 function DLQ: only for async invokes; none is invoked asynchronously
#   CKV_AWS_117 VPC: nothing private to reach; deliveries need the internet (NAT cost)
#   CKV_AWS_173 env var KMS: the variables hold names and URLs, and the cursor key (Lambda
#     encrypts variables at rest with its AWS-managed key)
#   CKV_AWS_149 secret CMK: the cursor key secret uses Secrets Manager's AWS-managed key
#   CKV_AWS_119 table CMK, CKV_AWS_158 log group CMK, CKV_AWS_27 queue KMS: encrypted at
#     rest with AWS-managed keys (SSE, SSE-SQS); a customer key is an opt-in cost
#   CKV_AWS_18 bucket access logs, CKV_AWS_21 bucket versioning: the import bucket holds
#     write-once files that expire after 7 days; the import record is their audit trail
SKIPS="CKV_AWS_149,CKV_AWS_115,CKV_AWS_116,CKV_AWS_117,CKV_AWS_173,CKV_AWS_119,CKV_AWS_158,CKV_AWS_27,CKV_AWS_18,CKV_AWS_21"
"$LINT/bin/checkov" --quiet --compact --skip-download --framework cloudformation \
  --skip-check "$SKIPS" -f "$OUT"
echo "[lint] no wildcard actions or resources"
"$LINT/bin/python" - "$OUT" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
bad = []
XRAY_WRITE = {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}
def actions(st):
    a = st.get("Action", [])
    return a if isinstance(a, list) else [a]
def statements(doc):
    # a statement may stand behind a condition (Fn::If): both branches are checked
    for st in doc.get("Statement", []):
        if isinstance(st, dict) and "Fn::If" in st:
            yield from statements({"Statement": [b for b in st["Fn::If"][1:] if b != {"Ref": "AWS::NoValue"}]})
        else:
            yield st
def walk(name, doc):
    for st in statements(doc):
        for key in ("Action", "Resource", "NotAction", "NotResource"):
            vals = st.get(key, [])
            for v in vals if isinstance(vals, list) else [vals]:
                text = json.dumps(v)
                # the allowed wildcards: a log group's own ARN (Fn::GetAtt <X>Logs.Arn), the
                # objects under the import bucket's imports/ and exports/ prefixes and under
                # the checkpoint bucket's checkpoints/ prefix (names are generated per import,
                # export and organization); nothing under checkpoints/ of the import bucket
                log_group = key == "Resource" and "Logs" in text and "Fn::GetAtt" in text
                import_files = key == "Resource" and (
                    text.endswith('-imports-${AWS::AccountId}-${AWS::Region}/imports/*"}')
                    or text.endswith('-imports-${AWS::AccountId}-${AWS::Region}/exports/*"}')
                    or v == {"Fn::Sub": "${CheckpointBucket.Arn}/checkpoints/*"})
                # X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level
                # permissions: `*` is the only resource they take (infra/README.md).
                xray = key == "Resource" and v == "*" and set(actions(st)) <= XRAY_WRITE
                # (EventDestinationRole's allow-list is the operator's EventDestinationArns
                # alone, no Allow when empty: it writes no wildcard of its own)
                if "*" in text and not (log_group or import_files or xray):
                    bad.append(f"{name}: {key} {text}")
for name, r in t["Resources"].items():
    p = r.get("Properties", {})
    for pol in p.get("Policies", []):
        walk(name, pol.get("PolicyDocument", {}))
    if r["Type"] == "AWS::IAM::Role":
        if p.get("ManagedPolicyArns"):
            bad.append(f"{name}: managed policies {p['ManagedPolicyArns']}")
if bad:
    print("\n".join(bad)); sys.exit(1)
print("[lint] IAM: no wildcard actions or resources (X-Ray writes aside), no managed policies")
PY
