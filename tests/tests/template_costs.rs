//! What the template costs and how it comes apart (issue 40, items 4 and 5), checked on the
//! template as CloudFormation receives it (`scripts/expand-template.sh`): JSON logs without
//! the platform's INFO lines, the usage metrics switch in every function, the budget only
//! with an amount, the alarm count infra/README.md prices, and list checkpoints in a bucket
//! of their own that the stack can delete, out of the import bucket and its roles.
//!
//! `CATALOG_REPO_UNDER_TEST=<folder>` runs the same checks on the `infra/` and `scripts/`
//! of another tree (an older one, to see them fail), expanded by this tree's script.

use catalog_e2e::repo_root;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The tree whose template, infra/README.md and scripts/dev.sh are checked.
fn root() -> PathBuf {
    std::env::var("CATALOG_REPO_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root())
}

/// The expanded template, made once per test binary into a file of its own.
fn expanded() -> &'static Value {
    static EXPANDED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EXPANDED.get_or_init(|| catalog_e2e::expand_template(&root().join("infra/template.yaml")))
}

fn resources() -> &'static serde_json::Map<String, Value> {
    expanded()["Resources"].as_object().expect("resources")
}

fn of_type(kind: &str) -> Vec<(&'static String, &'static Value)> {
    catalog_e2e::of_type(expanded(), kind)
}

fn functions() -> Vec<(&'static String, &'static Value)> {
    let functions = of_type("AWS::Lambda::Function");
    assert!(!functions.is_empty(), "no function in the template");
    functions
}

fn env(function: &Value) -> &Value {
    &function["Properties"]["Environment"]["Variables"]
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `## What it costs` section of infra/README.md.
fn costs_section() -> String {
    let readme = read("infra/README.md");
    let start = readme
        .find("## What it costs")
        .expect("infra/README.md has a costs section");
    let rest = &readme[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

#[test]
fn every_function_logs_json_at_info_without_the_platforms_info_lines() {
    for (name, f) in functions() {
        let logging = &f["Properties"]["LoggingConfig"];
        assert_eq!(logging["LogFormat"], "JSON", "{name}");
        assert_eq!(logging["SystemLogLevel"], "WARN", "{name}");
        // the metric lines carry no level: Lambda counts them as INFO
        assert_eq!(logging["ApplicationLogLevel"], "INFO", "{name}");
        // RUST_LOG would override the level Lambda passes (shared/src/telemetry.rs)
        assert_eq!(env(f).get("RUST_LOG"), None, "{name}");
        // its own log group, named as Lambda names a function's
        let group = logging["LogGroup"]["Ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: LoggingConfig.LogGroup is no Ref"));
        let group = &resources()[group];
        assert_eq!(group["Type"], "AWS::Logs::LogGroup", "{name}");
        let function_name = f["Properties"]["FunctionName"]["Fn::Sub"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: FunctionName"));
        assert_eq!(
            group["Properties"]["LogGroupName"],
            json!({"Fn::Sub": format!("/aws/lambda/{function_name}")}),
            "{name}"
        );
    }
}

#[test]
fn every_function_has_the_metrics_switch_and_the_code_reads_each_value() {
    let parameter = &expanded()["Parameters"]["OrgMetrics"];
    assert_eq!(
        parameter["AllowedValues"],
        json!(["off", "totals", "per-organization"])
    );
    assert_eq!(parameter["Default"], "totals");
    for (name, f) in functions() {
        assert_eq!(
            env(f)["CATALOG_ORG_METRICS"],
            json!({"Ref": "OrgMetrics"}),
            "{name}"
        );
        assert_eq!(
            env(f)["CATALOG_METRICS_NAMESPACE"],
            json!({"Fn::Sub": "Catalog/${Stage}"}),
            "{name}"
        );
    }
    // each allowed value is one of the code's settings, none the fallback of an unknown one
    let scope = |value: &str| {
        let value = value.to_string();
        let config = catalog::Config::from_lookup(move |name| match name {
            "CATALOG_METRICS_NAMESPACE" => Some("Catalog/prod".into()),
            "CATALOG_ORG_METRICS" => Some(value.clone()),
            _ => None,
        });
        format!("{:?}", config.metrics.expect("metrics").scope)
    };
    assert_eq!(
        ["off", "totals", "per-organization", "unknown"].map(scope),
        ["Off", "Totals", "PerOrganization", "Totals"]
    );
}

#[test]
fn the_budget_exists_only_with_an_amount_and_notifies_the_alarm_recipients() {
    let parameter = &expanded()["Parameters"]["MonthlyBudgetUsd"];
    assert_eq!(parameter["Default"], "0");
    let pattern =
        regex_lite::Regex::new(parameter["AllowedPattern"].as_str().expect("a pattern")).unwrap();
    for admitted in ["0", "1", "25", "1000", "9999999"] {
        assert!(pattern.is_match(admitted), "{admitted}");
    }
    for refused in ["", "00", "01", "0.5", "-1", "10000000", "25 "] {
        assert!(!pattern.is_match(refused), "{refused:?}");
    }
    assert_eq!(
        expanded()["Conditions"]["HasBudget"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Ref": "MonthlyBudgetUsd"}, "0"]}]})
    );
    let budgets = of_type("AWS::Budgets::Budget");
    assert_eq!(budgets.len(), 1);
    let budget = budgets[0].1;
    assert_eq!(budget["Condition"], "HasBudget");
    let p = &budget["Properties"];
    assert_eq!(p["Budget"]["BudgetType"], "COST");
    assert_eq!(p["Budget"]["TimeUnit"], "MONTHLY");
    assert_eq!(
        p["Budget"]["BudgetLimit"],
        json!({"Amount": {"Ref": "MonthlyBudgetUsd"}, "Unit": "USD"})
    );
    let subscribers = json!([
        {"Fn::If": ["HasAlarmEmail",
            {"SubscriptionType": "EMAIL", "Address": {"Ref": "AlarmEmail"}},
            {"Ref": "AWS::NoValue"}]},
        {"Fn::If": ["OwnAlarmTopic",
            {"Ref": "AWS::NoValue"},
            {"SubscriptionType": "SNS", "Address": {"Ref": "AlarmTopicArn"}}]},
    ]);
    let notifications = p["NotificationsWithSubscribers"].as_array().unwrap();
    let thresholds: Vec<&Value> = notifications
        .iter()
        .map(|n| &n["Notification"]["Threshold"])
        .collect();
    assert_eq!(thresholds, [&json!(80), &json!(100)]);
    for n in notifications {
        assert_eq!(n["Notification"]["NotificationType"], "ACTUAL");
        assert_eq!(n["Notification"]["ThresholdType"], "PERCENTAGE");
        assert_eq!(n["Notification"]["ComparisonOperator"], "GREATER_THAN");
        assert_eq!(n["Subscribers"], subscribers);
    }
    // a budget always reaches someone: AlarmEmail or AlarmTopicArn
    assert_eq!(
        expanded()["Rules"]["BudgetHasRecipient"]["RuleCondition"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Ref": "MonthlyBudgetUsd"}, "0"]}]})
    );
}

#[test]
fn the_costs_section_counts_the_alarms_and_the_metrics_they_read() {
    let alarms = of_type("AWS::CloudWatch::Alarm");
    let metrics: usize = alarms
        .iter()
        .map(|(_, a)| match a["Properties"]["Metrics"].as_array() {
            Some(queries) => queries
                .iter()
                .filter(|q| q.get("MetricStat").is_some())
                .count(),
            None => 1,
        })
        .sum();
    let costs = costs_section();
    let claim = format!(
        "{} alarms reading {metrics} metrics: ${}.{:02} a month",
        alarms.len(),
        metrics / 10,
        metrics % 10 * 10
    );
    assert!(
        costs.contains(&claim),
        "infra/README.md, \"What it costs\", should say \"{claim}\" ($0.10 per alarm metric)"
    );
}

/// Whether `v` names the import bucket: its generated name, or the resource.
fn names_the_import_bucket(v: &Value) -> bool {
    let text = v.to_string();
    text.contains("-imports-${AWS::AccountId}") || text.contains("\"ImportBucket")
}

#[test]
fn list_checkpoints_have_a_bucket_of_their_own_that_the_stack_can_delete() {
    let mut using = BTreeSet::new();
    let mut buckets = BTreeSet::new();
    for (name, f) in functions() {
        let Some(bucket) = env(f).get("CATALOG_CHECKPOINT_BUCKET") else {
            continue;
        };
        assert!(!names_the_import_bucket(bucket), "{name}: {bucket}");
        using.insert(name.as_str());
        buckets.insert(
            bucket["Ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {bucket} is no bucket of the stack"))
                .to_string(),
        );
    }
    assert_eq!(
        using,
        // the list functions, the two that run exports (`POST /exports` counts the
        // list, the import worker walks it), and the checkpoint builder
        BTreeSet::from([
            "CheckpointBuilderFunction",
            "ImportWorkerFunction",
            "ImportsFunction",
            "MetaobjectsFunction",
            "ProductsFunction",
            "SkusFunction",
            "VariantsFunction"
        ])
    );
    assert_eq!(buckets.len(), 1, "one checkpoint bucket: {buckets:?}");
    let name = buckets.pop_first().unwrap();
    assert_ne!(name, "ImportBucket");
    let bucket = &resources()[&name];
    assert_eq!(bucket["Type"], "AWS::S3::Bucket");
    assert_eq!(bucket["DeletionPolicy"], "Delete");
    let p = &bucket["Properties"];
    assert!(!names_the_import_bucket(&p["BucketName"]));
    // its name fits S3's 63 characters with the longest stage (16) and region (14)
    let longest = p["BucketName"]["Fn::Sub"]
        .as_str()
        .expect("a generated name")
        .replace("${Stage}", &"a".repeat(16))
        .replace("${AWS::AccountId}", "123456789012")
        .replace("${AWS::Region}", "ap-southeast-5");
    assert!(
        longest.len() <= 63,
        "{longest}: {} characters",
        longest.len()
    );
    let sse = &p["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        ["ServerSideEncryptionByDefault"]["SSEAlgorithm"];
    assert!(sse == "AES256" || sse == "aws:kms", "encryption: {sse}");
    assert_eq!(
        p["PublicAccessBlockConfiguration"],
        json!({"BlockPublicAcls": true, "BlockPublicPolicy": true,
               "IgnorePublicAcls": true, "RestrictPublicBuckets": true})
    );
    // a checkpoint is loaded while younger than 12 hours: S3's shortest expiry, 1 day, only
    // removes unusable ones
    let rules = p["LifecycleConfiguration"]["Rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["Status"], "Enabled");
    assert_eq!(rules[0]["ExpirationInDays"], 1);
    // TLS only, as the import bucket
    let policies: Vec<_> = of_type("AWS::S3::BucketPolicy")
        .into_iter()
        .filter(|(_, r)| r["Properties"]["Bucket"] == json!({"Ref": name}))
        .collect();
    assert_eq!(policies.len(), 1);
    let statements = &policies[0].1["Properties"]["PolicyDocument"]["Statement"];
    assert_eq!(statements[0]["Effect"], "Deny");
    assert_eq!(
        statements[0]["Condition"],
        json!({"Bool": {"aws:SecureTransport": false}})
    );
}

#[test]
fn no_role_reaches_checkpoints_in_the_import_bucket_and_only_the_list_functions_reach_them() {
    let arn = json!({"Fn::GetAtt": ["CheckpointBucket", "Arn"]});
    let objects = json!({"Fn::Sub": "${CheckpointBucket.Arn}/checkpoints/*"});
    let mut granted = BTreeSet::new();
    for (role, r) in of_type("AWS::IAM::Role") {
        for policy in r["Properties"]["Policies"].as_array().into_iter().flatten() {
            for st in policy["PolicyDocument"]["Statement"].as_array().unwrap() {
                let resources: Vec<&Value> = match &st["Resource"] {
                    Value::Array(list) => list.iter().collect(),
                    one => vec![one],
                };
                for resource in &resources {
                    if names_the_import_bucket(resource) {
                        assert!(
                            !resource.to_string().contains("checkpoints"),
                            "{role}: {resource}"
                        );
                        assert!(
                            !st["Condition"].to_string().contains("checkpoints"),
                            "{role}: {st}"
                        );
                    }
                    if resource.to_string().contains("CheckpointBucket") {
                        granted.insert(role.as_str());
                        if **resource == objects {
                            assert_eq!(
                                st["Action"],
                                json!(["s3:GetObject", "s3:PutObject"]),
                                "{role}"
                            );
                        } else {
                            assert_eq!(**resource, arn, "{role}");
                            assert_eq!(st["Action"], json!(["s3:ListBucket"]), "{role}");
                            assert_eq!(
                                st["Condition"],
                                json!({"StringLike": {"s3:prefix": ["checkpoints/*"]}}),
                                "{role}"
                            );
                        }
                    }
                }
            }
        }
    }
    assert_eq!(
        granted,
        BTreeSet::from([
            "CheckpointBuilderRole",
            "ImportWorkerRole",
            "ImportsRole",
            "MetaobjectsRole",
            "ProductsRole",
            "SkusRole",
            "VariantsRole"
        ])
    );
}

#[test]
fn the_teardown_runbook_empties_the_buckets_the_template_names() {
    let readme = read("infra/README.md");
    // `catalog-${Stage}-imports-${AWS::AccountId}-${AWS::Region}` as the runbook's shell has it
    let shell = |bucket: &str| {
        let name = resources()[bucket]["Properties"]["BucketName"]["Fn::Sub"]
            .as_str()
            .unwrap_or_else(|| panic!("{bucket}: BucketName"))
            .replace("${Stage}", "$S")
            .replace("${AWS::AccountId}", "$ACCOUNT")
            .replace("${AWS::Region}", "$REGION");
        format!("aws s3 rm \"s3://{name}\" --recursive")
    };
    for bucket in ["ImportBucket", "CheckpointBucket"] {
        assert!(
            readme.contains(&shell(bucket)),
            "infra/README.md should empty {bucket}: {}",
            shell(bucket)
        );
        // neither is versioned, so emptying it removes every object
        assert_eq!(
            resources()[bucket]["Properties"].get("VersioningConfiguration"),
            None
        );
    }
}

#[test]
fn make_dev_keeps_checkpoints_out_of_the_import_bucket() {
    let dev = read("scripts/dev.sh");
    let set: Vec<&str> = dev
        .lines()
        .filter(|l| {
            l.trim_start_matches("export ")
                .starts_with("CATALOG_CHECKPOINT_BUCKET=")
        })
        .collect();
    assert_eq!(
        set,
        [
            "export CATALOG_CHECKPOINT_BUCKET=catalog-checkpoints-local",
            "CATALOG_CHECKPOINT_BUCKET=$CATALOG_CHECKPOINT_BUCKET"
        ]
    );
    assert!(dev.contains("curl -sf -X PUT \"$AWS_ENDPOINT_URL_S3/$CATALOG_CHECKPOINT_BUCKET\""));
}
