//! What is declared in more than one place stays equal: the table in code and in the
//! template, the route tables and the local router, the template's routes, and the sample
//! events (which must work against the real functions).

use catalog::store::table::TABLE;
use catalog_e2e::{invoke, repo_root, Org};
use serde_json::Value;
use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn between<'a>(text: &'a str, begin: &str, end: &str) -> &'a str {
    let start = text
        .find(begin)
        .unwrap_or_else(|| panic!("marker {begin} missing"));
    let start = start + text[start..].find('\n').expect("line end") + 1;
    let stop = text
        .find(end)
        .unwrap_or_else(|| panic!("marker {end} missing"));
    text[start..stop].trim_end_matches(' ')
}

#[test]
fn template_table_matches_the_table_in_code() {
    let template = read("infra/template.yaml");
    let declared = between(&template, "# BEGIN table-shape", "# END table-shape");
    assert_eq!(
        declared,
        TABLE.cloudformation_yaml(6),
        "infra/template.yaml differs from the code: regenerate with `catalog-admin table-yaml`"
    );
}

#[test]
fn local_router_matches_the_route_tables() {
    let cargo = read("Cargo.toml");
    let declared = between(&cargo, "# BEGIN router", "# END router");
    let expected = format!(
        "[workspace.metadata.lambda.watch.router]\n{}",
        catalog::api::router_toml()
    );
    assert_eq!(declared, expected, "regenerate with `make generate`");
}

#[test]
fn the_openapi_file_is_the_generated_document() {
    assert_eq!(
        read("docs/openapi.yaml"),
        catalog::api::openapi::yaml(),
        "docs/openapi.yaml differs from the route tables: regenerate with `make generate`"
    );
}

#[tokio::test]
async fn the_openapi_document_is_served_without_authentication() {
    let r = catalog_e2e::Request::new("GET", "/v1/openapi.json")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, catalog::api::openapi::document());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let paths = r.body["paths"].as_object().unwrap();
    for api in catalog::api::FUNCTIONS {
        for route in api.routes() {
            let op = &paths[route.path][route.method.to_ascii_lowercase()];
            assert!(
                op.is_object(),
                "{} {} is documented",
                route.method,
                route.path
            );
        }
    }
    let r = catalog_e2e::Request::new("GET", "/v1/openapi.json?x=1")
        .send()
        .await;
    assert_eq!(
        (r.status, r.body),
        (
            400,
            serde_json::json!({"error": "unknown query parameter 'x'"})
        )
    );
    let r = catalog_e2e::Request::new("POST", "/v1/openapi.json")
        .send()
        .await;
    assert_eq!(r.status, 401, "only GET is public");
}

#[test]
fn template_routes_are_exactly_the_served_routes() {
    let template = read("infra/template.yaml");
    let lines: Vec<&str> = template.lines().map(str::trim).collect();
    let mut declared = BTreeSet::new();
    for pair in lines.windows(2) {
        if let (Some(m), Some(p)) = (
            pair[0].strip_prefix("Method: "),
            pair[1].strip_prefix("Path: "),
        ) {
            declared.insert(format!("{m} {p}"));
        }
    }
    let mut served: BTreeSet<String> = catalog::api::FUNCTIONS
        .iter()
        .flat_map(|api| api.routes().map(|r| format!("{} /v1{}", r.method, r.path)))
        .collect();
    // and the console's pages (`api/console/site.rs`)
    served.extend(["GET /console".into(), "GET /console/{proxy+}".into()]);
    assert_eq!(declared, served);
}

#[tokio::test]
async fn sample_events_work_against_the_real_functions() {
    let org = Org::new().await;
    let mut seen = 0;
    // Writes first so that the reads find what they ask for.
    let fixtures = [
        ("products", "events/products/patch-product.json", 201),
        ("products", "events/products/bulk-patch-products.json", 200),
        ("products", "events/products/get-product.json", 200),
        // the product exists: its history (none yet, or some) is erased
        (
            "products",
            "events/products/erase-product-history.json",
            200,
        ),
        ("products", "events/products/list-products.json", 200),
        ("variants", "events/variants/get-variant.json", 200),
        ("variants", "events/variants/list-variants.json", 200),
        ("skus", "events/skus/get-sku.json", 200),
        ("skus", "events/skus/list-skus.json", 200),
        ("skus", "events/skus/patch-sku.json", 200),
        ("attributes", "events/attributes/create-attribute.json", 201),
        ("attributes", "events/attributes/get-attribute.json", 200),
        ("attributes", "events/attributes/list-attributes.json", 200),
        ("attributes", "events/attributes/delete-attribute.json", 200),
        ("settings", "events/settings/create-family.json", 201),
        ("settings", "events/settings/get-family.json", 200),
        ("settings", "events/settings/list-families.json", 200),
        ("settings", "events/settings/create-language.json", 201),
        ("settings", "events/settings/list-languages.json", 200),
        ("settings", "events/settings/create-channel.json", 201),
        ("settings", "events/settings/list-channels.json", 200),
        (
            "settings",
            "events/settings/create-completeness-profile.json",
            201,
        ),
        (
            "settings",
            "events/settings/get-completeness-profile.json",
            200,
        ),
        (
            "settings",
            "events/settings/list-completeness-profiles.json",
            200,
        ),
        (
            "products",
            "events/products/list-products-filtered.json",
            200,
        ),
        ("assets", "events/assets/create-asset.json", 201),
        ("assets", "events/assets/get-asset.json", 200),
        ("assets", "events/assets/list-assets.json", 200),
        ("assets", "events/assets/put-product-assets.json", 200),
        ("assets", "events/assets/list-product-assets.json", 200),
        ("assets", "events/assets/delete-asset.json", 200),
        ("categories", "events/categories/put-category.json", 201),
        ("categories", "events/categories/list-categories.json", 200),
        (
            "metaobjects",
            "events/metaobjects/create-definition.json",
            201,
        ),
        ("metaobjects", "events/metaobjects/put-metaobject.json", 201),
        ("metaobjects", "events/metaobjects/get-metaobject.json", 200),
        ("bundles", "events/bundles/put-bundle.json", 201),
        ("bundles", "events/bundles/list-bundles.json", 200),
        ("bundles", "events/bundles/delete-bundle.json", 200),
        ("skus", "events/skus/delete-sku.json", 200),
        ("variants", "events/variants/delete-variant.json", 200),
        ("products", "events/products/delete-product.json", 200),
        ("webhooks", "events/webhooks/create-webhook.json", 201),
        ("webhooks", "events/webhooks/list-webhooks.json", 200),
        ("settings", "events/settings/list-api-keys.json", 200),
        ("settings", "events/settings/get-usage.json", 200),
        ("settings", "events/settings/patch-settings.json", 200),
        ("imports", "events/imports/list-imports.json", 200),
        ("console", "events/console/create-console-link.json", 201),
        ("console", "events/console/get-console-page.json", 200),
        // Not HTTP: a batch whose records all succeed reports no failures (the upload's
        // import does not exist: nothing to run).
        ("import-worker", "events/import-worker/s3-upload.json", 0),
        // Not HTTP: a batch whose records all succeed reports no failures.
        ("change-feed", "events/change-feed/stream-batch.json", 0),
        // Not HTTP: the schedule's event; without a checkpoint bucket, nothing to build.
        (
            "checkpoint-builder",
            "events/checkpoint-builder/schedule.json",
            -1,
        ),
        (
            "webhook-delivery",
            "events/webhook-delivery/sqs-batch.json",
            0,
        ),
    ];
    for (function, file, status) in fixtures {
        let text = read(file).replace("${CATALOG_API_KEY}", &org.key);
        let event: Value = serde_json::from_str(&text).expect("valid JSON");
        let out = invoke(function, event).await;
        if status == 0 {
            assert_eq!(out, serde_json::json!({"batchItemFailures": []}), "{file}");
        } else if status < 0 {
            assert_eq!(
                (&out["lists"], &out["failed"]),
                (&serde_json::json!(0), &serde_json::json!(0)),
                "{file}: {out}"
            );
        } else {
            assert_eq!(out["statusCode"], status, "{file}: {out}");
        }
        seen += 1;
    }
    let files: usize = std::fs::read_dir(repo_root().join("events"))
        .unwrap()
        .map(|dir| std::fs::read_dir(dir.unwrap().path()).unwrap().count())
        .sum();
    assert_eq!(seen, files, "every fixture in events/ is exercised");
}

/// The template as CloudFormation receives it: `scripts/expand-template.sh` (the SAM
/// transform `make lint-template` lints), run once per test binary into its own file.
fn expanded() -> &'static Value {
    static EXPANDED: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    EXPANDED.get_or_init(|| catalog_e2e::expand_template(&repo_root().join("infra/template.yaml")))
}

fn resource(name: &str) -> &'static Value {
    let r = &expanded()["Resources"][name];
    assert!(r.is_object(), "no resource {name} in the expanded template");
    r
}

fn of_type(kind: &str) -> Vec<(&'static String, &'static Value)> {
    catalog_e2e::of_type(expanded(), kind)
}

#[test]
fn the_catch_all_route_goes_to_the_fallback_function() {
    let apis = of_type("AWS::ApiGatewayV2::Api");
    assert_eq!(apis.len(), 1);
    let default = &apis[0].1["Properties"]["Body"]["paths"]["$default"];
    let any = &default["x-amazon-apigateway-any-method"];
    assert_eq!(any["isDefaultRoute"], true, "{default}");
    assert_eq!(
        any["x-amazon-apigateway-integration"]["uri"],
        serde_json::json!({"Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${FallbackFunctionAliaslive}/invocations"}),
        "the API invokes the function's live alias (gradual deployment)"
    );
    assert_eq!(
        any["x-amazon-apigateway-integration"]["payloadFormatVersion"],
        "2.0"
    );
    // API Gateway may invoke it for any method and path of the API.
    let allowed: Vec<&Value> = of_type("AWS::Lambda::Permission")
        .into_iter()
        .filter(|(_, p)| p["Properties"]["FunctionName"]["Ref"] == "FallbackFunctionAliaslive")
        .map(|(_, p)| &p["Properties"]["SourceArn"]["Fn::Sub"][0])
        .collect();
    assert_eq!(
        allowed,
        vec![&serde_json::json!(
            "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${__ApiId__}/${__Stage__}/*"
        )]
    );
    assert_eq!(
        resource("FallbackFunction")["Properties"]["Code"]["S3Key"],
        "FallbackFunction.zip"
    );
}

#[tokio::test]
async fn the_fallback_binary_answers_unknown_paths_404_and_other_methods_405() {
    let org = Org::new().await;
    let fallback = |req: catalog_e2e::Request| catalog_e2e::send_to("fallback", req);
    let get = |path: &str| catalog_e2e::Request::new("GET", path).bearer(&org.key);
    for path in [
        "/v1/nothing",
        "/",
        "/v2/products",
        "/v1/products/p1/nothing",
    ] {
        let r = fallback(get(path)).await;
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            (r.status, r.body),
            (
                404,
                serde_json::json!({"error": format!("no route for GET {path}")})
            ),
            "{path}"
        );
    }
    let r = fallback(catalog_e2e::Request::new("POST", "/v1/products/p1").bearer(&org.key)).await;
    assert_eq!(r.header("allow"), Some("GET, PATCH, DELETE"));
    assert_eq!(
        (r.status, r.body),
        (
            405,
            serde_json::json!({"error": "method POST is not allowed on this path"})
        )
    );
    // Another function's path: the fallback knows every function's routes.
    let r = fallback(catalog_e2e::Request::new("DELETE", "/v1/channels").bearer(&org.key)).await;
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, POST")));
    // Authentication first, as every function: no key, no routing answer.
    let r = fallback(catalog_e2e::Request::new("GET", "/v1/nothing")).await;
    assert_eq!(
        (r.status, r.body),
        (
            401,
            serde_json::json!({"error": "Unauthorized - missing or invalid authentication"})
        )
    );
    // The gateway of the tests routes as API Gateway does: these reach the fallback.
    let r = get("/v1/nothing").send().await;
    assert_eq!(r.status, 404);
    let r = catalog_e2e::Request::new("PUT", "/v1/skus")
        .bearer(&org.key)
        .send()
        .await;
    assert_eq!((r.status, r.header("allow")), (405, Some("GET")));
}

#[test]
fn the_alarm_topic_key_lets_cloudwatch_publish() {
    let topic = &resource("AlarmTopic")["Properties"];
    assert_eq!(
        topic["KmsMasterKeyId"],
        serde_json::json!({"Fn::GetAtt": ["AlarmTopicKey", "Arn"]}),
        "alias/aws/sns cannot be used by CloudWatch alarms"
    );
    let key = &resource("AlarmTopicKey")["Properties"];
    assert_eq!(key["EnableKeyRotation"], true);
    let grants: Vec<&Value> = key["KeyPolicy"]["Statement"]
        .as_array()
        .expect("statements")
        .iter()
        .filter(|s| s["Principal"]["Service"] == "cloudwatch.amazonaws.com")
        .collect();
    assert_eq!(
        grants,
        vec![&serde_json::json!({
            "Sid": "CloudWatchAlarmsPublish",
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
            "Resource": "*"
        })]
    );
    // Every alarm publishes to that topic, or to the existing one AlarmTopicArn names (then
    // the stack makes no topic and no key of its own); recoveries (OKActions) go there too.
    let topic = serde_json::json!([alarm_topic()]);
    for (name, alarm) in of_type("AWS::CloudWatch::Alarm") {
        let p = &alarm["Properties"];
        assert_eq!(p["AlarmActions"], topic, "{name}");
        assert!(
            p["OKActions"].is_null() || p["OKActions"] == topic,
            "{name}"
        );
    }
    for own in ["AlarmTopic", "AlarmTopicKey", "AlarmTopicKeyAlias"] {
        assert_eq!(resource(own)["Condition"], "OwnAlarmTopic", "{own}");
    }
    assert_eq!(
        resource("AlarmEmailSubscription")["Properties"]["TopicArn"],
        alarm_topic()
    );
    assert_eq!(
        expanded()["Outputs"]["AlarmTopicArn"]["Value"],
        alarm_topic()
    );
}

/// Where every alarm publishes: the stack's own topic, or the AlarmTopicArn parameter's.
fn alarm_topic() -> Value {
    serde_json::json!({"Fn::If": ["OwnAlarmTopic", {"Ref": "AlarmTopic"}, {"Ref": "AlarmTopicArn"}]})
}

#[test]
fn the_delivery_queue_keeps_messages_longer_than_any_admitted_schedule() {
    use catalog::webhooks::config::{
        DEFAULT_RETRY_SCHEDULE, MAX_COALESCE_SECS, MAX_RETRY_STEPS, MAX_RETRY_STEP_SECS,
    };
    let queue = &resource("DeliveryQueue")["Properties"];
    let retention = queue["MessageRetentionPeriod"].as_u64().expect("retention");
    let visibility = queue["VisibilityTimeout"].as_u64().expect("visibility");
    assert_eq!(retention, 1_209_600, "SQS's maximum, 14 days");
    // The time a delivery can spend on the queue: its coalescing delay, every wait of the
    // schedule, and each attempt (at most the visibility timeout when it crashes).
    let lifetime = |schedule: &[u64]| {
        MAX_COALESCE_SECS + schedule.iter().sum::<u64>() + (schedule.len() as u64 + 1) * visibility
    };
    let param = &expanded()["Parameters"]["WebhookRetrySchedule"];
    let default: Vec<u64> = param["Default"]
        .as_str()
        .expect("default")
        .split(',')
        .map(|n| n.parse().expect("seconds"))
        .collect();
    assert_eq!(default, DEFAULT_RETRY_SCHEDULE);
    assert_eq!(lifetime(&default), 108_700);
    assert!(lifetime(&default) <= retention);
    // The longest schedule the parameter admits fits too; one step more does not pass.
    let longest = vec![MAX_RETRY_STEP_SECS; MAX_RETRY_STEPS];
    assert_eq!(lifetime(&longest), 778_320);
    assert!(lifetime(&longest) <= retention);
    let pattern = regex_lite::Regex::new(param["AllowedPattern"].as_str().expect("pattern"))
        .expect("a regex");
    let text = |s: &[u64]| s.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
    for ok in [
        text(&default),
        text(&longest),
        "0".into(),
        "43000".into(),
        "9999,10000,39999,42999".into(),
    ] {
        assert!(pattern.is_match(&ok), "{ok} is refused");
    }
    let too_many = vec![1; MAX_RETRY_STEPS + 1];
    for bad in [
        text(&too_many),
        "43001".into(),
        "50000".into(),
        "100000".into(),
        "".into(),
        "60,".into(),
        "60 ,300".into(),
        "-1".into(),
    ] {
        assert!(!pattern.is_match(&bad), "{bad} is admitted");
    }
}

/// The metrics AWS publishes that the template's alarms may name: namespace, metric, and
/// the dimension sets it is published with.
type Published = (
    &'static str,
    &'static [&'static str],
    &'static [&'static [&'static str]],
);

const KNOWN_METRICS: &[Published] = &[
    (
        "AWS/Lambda",
        &[
            "Errors",
            "Throttles",
            "Invocations",
            "Duration",
            "IteratorAge",
            "ConcurrentExecutions",
            "RecursiveInvocationsDropped",
        ],
        &[&["FunctionName"], &["FunctionName", "Resource"]],
    ),
    (
        "AWS/SQS",
        &[
            "ApproximateNumberOfMessagesVisible",
            "ApproximateAgeOfOldestMessage",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
            "NumberOfMessagesSent",
        ],
        &[&["QueueName"]],
    ),
    (
        "AWS/ApiGateway",
        // HTTP APIs (REST APIs name theirs 5XXError and 4XXError, by ApiName).
        &[
            "4xx",
            "5xx",
            "Count",
            "Latency",
            "IntegrationLatency",
            "DataProcessed",
        ],
        &[
            &["ApiId"],
            &["ApiId", "Stage"],
            &["ApiId", "Stage", "Route"],
        ],
    ),
    (
        "AWS/DynamoDB",
        // Per table, or per global secondary index of a table.
        &[
            "ReadThrottleEvents",
            "WriteThrottleEvents",
            "ThrottledRequests",
            "UserErrors",
            "SystemErrors",
        ],
        &[&["TableName"], &["TableName", "GlobalSecondaryIndexName"]],
    ),
];

/// The metrics an alarm reads: its own (Namespace, MetricName, Dimensions), or each
/// `MetricStat` of a metric math alarm (whose expression names only those ids).
fn alarm_metrics(name: &str, p: &Value) -> Vec<Value> {
    let Some(metrics) = p["Metrics"].as_array() else {
        return vec![serde_json::json!({
            "Namespace": p["Namespace"],
            "MetricName": p["MetricName"],
            "Dimensions": p["Dimensions"],
        })];
    };
    assert!(
        p["MetricName"].is_null() && p["Namespace"].is_null(),
        "{name}"
    );
    let ids: BTreeSet<&str> = metrics
        .iter()
        .map(|m| m["Id"].as_str().expect("id"))
        .collect();
    let returned: Vec<&Value> = metrics.iter().filter(|m| m["ReturnData"] == true).collect();
    assert_eq!(
        returned.len(),
        1,
        "{name}: one expression is the alarm's series"
    );
    let expression = returned[0]["Expression"].as_str().expect("an expression");
    let named: BTreeSet<&str> = expression
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .collect();
    for id in &named {
        assert!(
            ids.contains(id),
            "{name}: {expression} names no metric {id}"
        );
    }
    metrics
        .iter()
        .filter(|m| !m["MetricStat"].is_null())
        .map(|m| {
            assert!(
                named.contains(m["Id"].as_str().unwrap()),
                "{name}: {} is unused",
                m["Id"]
            );
            m["MetricStat"]["Metric"].clone()
        })
        .collect()
}

#[test]
fn every_alarm_names_a_metric_that_exists() {
    let filters = of_type("AWS::Logs::MetricFilter");
    let alarms = of_type("AWS::CloudWatch::Alarm");
    let mut seen = BTreeSet::new();
    for (name, alarm) in &alarms {
        for m in alarm_metrics(name, &alarm["Properties"]) {
            let namespace = &m["Namespace"];
            let metric = m["MetricName"].as_str().expect("metric name");
            let mut dims: Vec<&str> = m["Dimensions"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .map(|d| d["Name"].as_str().expect("name"))
                        .collect()
                })
                .unwrap_or_default();
            dims.sort();
            if let Some(ns) = namespace.as_str() {
                let (_, metrics, sets) = KNOWN_METRICS
                    .iter()
                    .find(|(n, _, _)| *n == ns)
                    .unwrap_or_else(|| panic!("{name}: unknown namespace {ns}"));
                assert!(metrics.contains(&metric), "{name}: {ns} has no {metric}");
                assert!(
                    sets.iter().any(|s| {
                        let mut s = s.to_vec();
                        s.sort();
                        s == dims
                    }),
                    "{name}: {ns} {metric} is not published by {dims:?}"
                );
            } else {
                // A custom metric: a metric filter of the template must publish it, with the
                // same (absent) dimensions.
                let published = filters.iter().any(|(_, f)| {
                    f["Properties"]["MetricTransformations"]
                        .as_array()
                        .expect("transformations")
                        .iter()
                        .any(|t| {
                            t["MetricNamespace"] == *namespace
                                && t["MetricName"] == metric
                                && t["Dimensions"].is_null()
                        })
                });
                assert!(
                    published,
                    "{name}: no metric filter publishes {namespace} {metric}"
                );
                assert!(dims.is_empty(), "{name}: {dims:?}");
            }
            seen.insert(format!(
                "{} {metric}",
                namespace.as_str().unwrap_or("custom")
            ));
        }
    }
    // The alarms issues 20 and 31 asked for, beside every function's errors and throttles.
    for wanted in [
        "custom ApiFailures",
        "custom ApiRetryAfterAnswers",
        "AWS/Lambda IteratorAge",
        "AWS/Lambda RecursiveInvocationsDropped",
        "AWS/SQS ApproximateAgeOfOldestMessage",
        "AWS/SQS ApproximateNumberOfMessagesVisible",
        "AWS/DynamoDB ReadThrottleEvents",
        "AWS/DynamoDB WriteThrottleEvents",
        "custom ImportRunsDeferred",
        "custom CheckpointAgeMs",
        "custom CheckpointBuildsFailed",
    ] {
        assert!(seen.contains(wanted), "no alarm on {wanted}: {seen:?}");
    }
    // API Gateway's 5xx counts the designed 503 Retry-After answers with the failures: no
    // alarm pages on it (api_failures_are_counted_apart_from_retry_after_answers).
    assert!(!seen.contains("AWS/ApiGateway 5xx"), "{seen:?}");
    let functions = of_type("AWS::Lambda::Function").len();
    assert_eq!(functions, 18);
    // every function's errors and throttles (the scheduled checkpoint builder's errors
    // only), and 17 more
    assert_eq!(alarms.len(), 2 * functions - 1 + 17);
    // The deferred-import metric counts a line the worker really logs, and so do the
    // checkpoint builder's.
    assert!(read("shared/src/workers/import.rs").contains("\"import deferred\""));
    let builder = read("shared/src/workers/checkpoints.rs");
    assert!(
        builder.contains("\"checkpoint build\"") && builder.contains("\"checkpoint not built\"")
    );
}

/// `make deploy STAGE=<stage>` deploys with the stage's section of infra/samconfig.toml:
/// every stage names its own stack and `Stage`, only parameters the template has, values
/// the template admits, and the tags and settings that make the deploy ask nothing.
#[test]
fn every_stage_of_samconfig_deploys_without_questions() {
    let config = read("infra/samconfig.toml");
    let params = expanded()["Parameters"].as_object().expect("parameters");
    let mut stages = Vec::new();
    for section in config.split("\n[").skip(1) {
        let (header, body) = section.split_once("]\n").expect("a section");
        let Some(stage) = header.strip_suffix(".deploy.parameters") else {
            continue;
        };
        stages.push(stage);
        let value = |key: &str| {
            body.lines()
                .find_map(|l| l.strip_prefix(&format!("{key} = ")))
                .unwrap_or_else(|| panic!("[{header}] has no {key}"))
        };
        assert_eq!(value("stack_name"), format!("\"catalog-{stage}\""));
        assert_eq!(value("capabilities"), "\"CAPABILITY_IAM\"");
        assert_eq!(value("confirm_changeset"), "false");
        assert_eq!(value("resolve_s3"), "true");
        // Extra cost-allocation tags may follow; these two come first.
        assert!(
            value("tags").starts_with(&format!("\"app=\\\"catalog\\\" stage=\\\"{stage}\\\"")),
            "{stage}: {}",
            value("tags")
        );
        // The region, pinned in both sections SAM reads, and the account, in the section
        // only scripts/deploy.sh reads, which refuses a deploy elsewhere.
        let region = value("region");
        assert!(
            regex_lite::Regex::new(r#"^"[a-z]{2}(-[a-z]+)+-[0-9]"$"#)
                .unwrap()
                .is_match(region),
            "{stage}: region {region}"
        );
        let ours = config
            .split(&format!("[{stage}.catalog.parameters]\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_else(|| panic!("no [{stage}.catalog.parameters]"));
        assert!(
            ours.lines().any(|l| l.starts_with("account_id = \"")),
            "{stage}: account_id"
        );
        let production = ours
            .lines()
            .find_map(|l| l.strip_prefix("production = "))
            .unwrap_or_else(|| panic!("{stage}: production = true|false"));
        assert_eq!(production == "true", stage == "prod", "{stage}");
        let package = config
            .split(&format!("[{stage}.package.parameters]\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_else(|| panic!("no [{stage}.package.parameters]"));
        assert!(
            package.lines().any(|l| l == "resolve_s3 = true"),
            "{stage}: sam package uploads through SAM's bucket"
        );
        assert!(
            package.lines().any(|l| l == format!("region = {region}")),
            "{stage}: sam package uploads to the stage's region"
        );
        let overrides = value("parameter_overrides");
        let overrides = overrides
            .strip_prefix('"')
            .and_then(|o| o.strip_suffix('"'))
            .expect("a quoted string")
            .replace("\\\"", "\"");
        // Who the alarms reach is written down for every stage (scripts/deploy.sh refuses a
        // production stage where both are empty).
        for recipient in ["AlarmEmail=", "AlarmTopicArn="] {
            assert!(
                overrides
                    .split_whitespace()
                    .any(|p| p.starts_with(recipient)),
                "{stage}: parameter_overrides does not state {recipient}\"...\""
            );
        }
        for pair in overrides.split_whitespace() {
            let (name, v) = pair.split_once('=').expect("Name=\"value\"");
            let v = v.trim_matches('"');
            let param = &params
                .get(name)
                .unwrap_or_else(|| panic!("{stage}: the template has no parameter {name}"));
            if let Some(pattern) = param["AllowedPattern"].as_str() {
                let re = regex_lite::Regex::new(pattern).expect("a regex");
                assert!(re.is_match(v), "{stage}: {name}={v} is refused");
            }
            if name == "Stage" {
                assert_eq!(v, stage);
            }
        }
    }
    assert_eq!(stages, ["prod", "staging"]);
}

#[test]
fn the_readme_limits_table_is_the_one_the_code_checks() {
    let readme = read("README.md");
    assert!(
        readme.contains(&catalog::domain::limits::markdown()),
        "README.md's limits table differs from shared/src/domain/limits.rs:\n{}",
        catalog::domain::limits::markdown()
    );
}

/// Issue 31, 1: the import worker continues an import through its own queue and the delivery
/// function releases parked deliveries to its own queue. Lambda's default (Terminate) cuts
/// such a chain after about 16 hops, so both allow it, deliberately, and only those two;
/// Lambda's drops are alarmed all the same. `tests/tests/recursion.rs` runs such a chain.
#[test]
fn the_looping_functions_allow_their_recursion_and_drops_are_alarmed() {
    let allowed: BTreeSet<&str> = of_type("AWS::Lambda::Function")
        .into_iter()
        .filter_map(|(name, f)| {
            let setting = &f["Properties"]["RecursiveLoop"];
            assert!(setting.is_null() || setting == "Allow", "{name}: {setting}");
            (setting == "Allow").then_some(name.as_str())
        })
        .collect();
    assert_eq!(
        allowed,
        BTreeSet::from(["ImportWorkerFunction", "WebhookDeliveryFunction"])
    );
    // They do send to the queue that invokes them (what makes the loop).
    for (role, queue) in [
        ("ImportWorkerRole", "ImportQueue"),
        ("WebhookDeliveryRole", "DeliveryQueue"),
    ] {
        let statements = resource(role)["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
            .as_array()
            .unwrap();
        assert!(statements.iter().any(|s| {
            s["Action"]
                .as_array()
                .unwrap()
                .contains(&"sqs:SendMessage".into())
                && s["Resource"]
                    .as_array()
                    .unwrap()
                    .contains(&serde_json::json!({"Fn::GetAtt": [queue, "Arn"]}))
        }));
    }
    for (alarm, function) in [
        ("ImportWorkerRecursionAlarm", "ImportWorkerFunction"),
        ("WebhookDeliveryRecursionAlarm", "WebhookDeliveryFunction"),
    ] {
        let p = &resource(alarm)["Properties"];
        assert_eq!(p["MetricName"], "RecursiveInvocationsDropped");
        assert_eq!(
            p["Dimensions"],
            serde_json::json!([{"Name": "FunctionName", "Value": {"Ref": function}}])
        );
        assert_eq!(
            (&p["Threshold"], &p["ComparisonOperator"]),
            (&0.into(), &"GreaterThanThreshold".into())
        );
    }
    let readme = read("infra/README.md");
    assert!(readme.contains("## Recursive loops"));
    assert!(readme.contains("RecursiveLoop: Allow"));
}

/// Issue 31, 2: a failed first create deletes the table it made (RetainExceptOnCreate, and
/// no deletion protection until the create succeeded: scripts/deploy.sh, tested in
/// tests/tests/deploy.rs); afterwards the table is retained and protected as before.
#[test]
fn a_failed_first_create_takes_its_table_with_it() {
    let table = resource("CatalogTable");
    assert_eq!(table["DeletionPolicy"], "RetainExceptOnCreate");
    assert_eq!(table["UpdateReplacePolicy"], "Retain");
    assert_eq!(
        table["Properties"]["DeletionProtectionEnabled"],
        serde_json::json!({"Fn::If": ["TableProtected", true, false]})
    );
    let param = &expanded()["Parameters"]["TableDeletionProtection"];
    assert_eq!(param["Default"], "true");
    assert_eq!(
        expanded()["Conditions"]["TableProtected"],
        serde_json::json!({"Fn::Equals": [{"Ref": "TableDeletionProtection"}, "true"]})
    );
    let deploy = read("scripts/deploy.sh");
    assert!(deploy.contains(r#"TableDeletionProtection=\"false\""#));
    assert!(read("infra/README.md").contains("### A failed first deploy"));
}

/// The value of `$.a.b` in a JSON log line, as a CloudWatch filter pattern reads it.
fn json_path<'a>(line: &'a Value, path: &str) -> Option<&'a Value> {
    path.strip_prefix("$.")?
        .split('.')
        .try_fold(line, |v, key| v.get(key))
}

/// Whether a CloudWatch Logs JSON filter pattern of the shapes the template uses
/// (`{ $.a = "x" }`, `{ ($.a = "5*") && ($.a != "503") }`) matches a JSON log line.
fn filter_matches(pattern: &str, line: &Value) -> bool {
    let body = pattern
        .trim()
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .expect("a JSON filter pattern");
    body.split("&&").all(|term| {
        let term = term
            .trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .trim();
        let (path, negate, value) = if let Some((p, v)) = term.split_once("!=") {
            (p.trim(), true, v.trim())
        } else {
            let (p, v) = term.split_once('=').expect("= or !=");
            (p.trim(), false, v.trim())
        };
        let want = value.trim_matches('"');
        let found = match json_path(line, path) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        let equal = found.is_some_and(|f| match want.strip_suffix('*') {
            Some(prefix) => f.starts_with(prefix),
            None => f == want,
        });
        equal != negate
    })
}

/// Issue 31, 4: the 503s the functions answer by design (with Retry-After) and real
/// failures are counted apart, from the API's access log, with thresholds that page for
/// failures and only for sustained 503s.
#[test]
fn api_failures_are_counted_apart_from_retry_after_answers() {
    use catalog::error::ApiError;
    // The designed 503s carry Retry-After.
    for designed in [
        ApiError::unavailable(),
        ApiError::partially_applied("throttled"),
    ] {
        assert_eq!(designed.status, 503);
        assert!(designed.headers.iter().any(|(n, _)| *n == "retry-after"));
    }
    let format = resource("HttpApiApiGatewayDefaultStage")["Properties"]["AccessLogSettings"]
        ["Format"]
        .as_str()
        .expect("the access log format");
    let line = |status: u16| -> Value {
        let text = format.replace("$context.status", &status.to_string());
        let text = regex_lite::Regex::new(r"\$context\.[A-Za-z.]+")
            .unwrap()
            .replace_all(&text, "-");
        serde_json::from_str(&text).expect("an access log line is JSON")
    };
    let counted = |filter: &str| -> Vec<u16> {
        let f = &resource(filter)["Properties"];
        assert_eq!(
            f["LogGroupName"],
            serde_json::json!({"Ref": "ApiAccessLogs"})
        );
        let pattern = f["FilterPattern"].as_str().unwrap();
        [200, 201, 304, 400, 401, 404, 409, 429, 500, 502, 503, 504]
            .into_iter()
            .filter(|s| filter_matches(pattern, &line(*s)))
            .collect()
    };
    assert_eq!(counted("ApiFailuresMetric"), [500, 502, 504]);
    assert_eq!(counted("ApiRetryAfterMetric"), [503]);
    let failures = &resource("ApiFailuresAlarm")["Properties"];
    assert_eq!(failures["MetricName"], "ApiFailures");
    assert_eq!(
        failures["Threshold"],
        serde_json::json!({"Ref": "ApiFailureAlarmThreshold"})
    );
    assert_eq!(
        failures["ComparisonOperator"],
        "GreaterThanOrEqualToThreshold"
    );
    assert_eq!(
        expanded()["Parameters"]["ApiFailureAlarmThreshold"]["Default"],
        5
    );
    let retry = &resource("ApiRetryAfterAlarm")["Properties"];
    assert_eq!(retry["MetricName"], "ApiRetryAfterAnswers");
    assert_eq!(
        (&retry["EvaluationPeriods"], &retry["DatapointsToAlarm"]),
        (&3.into(), &3.into())
    );
    assert_eq!(
        expanded()["Parameters"]["ApiRetryAfterAlarmThreshold"]["Default"],
        100
    );
}

/// Issue 31, 4: a dead-letter queue's alarm notifies again for a later failure (its depth
/// alarm holds ALARM while anything is queued, an arrivals alarm fires on every increase),
/// the change feed's failures queue included; the table's throttling is alarmed.
#[test]
fn dead_letter_alarms_notify_again_and_throttling_is_alarmed() {
    for (queue, depth, arrivals) in [
        (
            "DeliveryDeadLetterQueue",
            "DeliveryDeadLetterQueueDepthAlarm",
            "DeliveryDeadLetterArrivalsAlarm",
        ),
        (
            "ImportDeadLetterQueue",
            "ImportDeadLetterQueueDepthAlarm",
            "ImportDeadLetterArrivalsAlarm",
        ),
        (
            "ChangeFeedFailures",
            "ChangeFeedFailuresDepthAlarm",
            "ChangeFeedFailuresArrivalsAlarm",
        ),
    ] {
        let name = serde_json::json!({"Fn::GetAtt": [queue, "QueueName"]});
        let d = &resource(depth)["Properties"];
        assert_eq!(d["Dimensions"][0]["Value"], name, "{depth}");
        assert_eq!(
            d["OKActions"],
            serde_json::json!([alarm_topic()]),
            "{depth}: says when drained"
        );
        let a = &resource(arrivals)["Properties"];
        let metrics = a["Metrics"].as_array().unwrap();
        let series = metrics.iter().find(|m| m["ReturnData"] == true).unwrap();
        assert_eq!(series["Expression"], "DIFF(FILL(depth, 0))", "{arrivals}");
        let stat = &metrics.iter().find(|m| m["Id"] == "depth").unwrap()["MetricStat"];
        assert_eq!(
            stat["Metric"]["MetricName"],
            "ApproximateNumberOfMessagesVisible"
        );
        assert_eq!(stat["Metric"]["Dimensions"][0]["Value"], name, "{arrivals}");
        assert_eq!(
            (&a["Threshold"], &a["ComparisonOperator"]),
            (&0.into(), &"GreaterThanThreshold".into())
        );
        assert_eq!(a["TreatMissingData"], "notBreaching");
    }
    let throttling = &resource("TableThrottlingAlarm")["Properties"];
    let read: Vec<(String, usize)> = throttling["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| !m["MetricStat"].is_null())
        .map(|m| {
            let metric = &m["MetricStat"]["Metric"];
            (
                metric["MetricName"].as_str().unwrap().to_string(),
                metric["Dimensions"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            ("ReadThrottleEvents".to_string(), 1),
            ("WriteThrottleEvents".to_string(), 1),
            ("ReadThrottleEvents".to_string(), 2),
            ("WriteThrottleEvents".to_string(), 2),
        ],
        "reads and writes, of the table and of its index"
    );
}

/// Issue 31, 4: every alarm has a runbook in infra/README.md: what it means and the first
/// three commands. The per-function alarms share theirs (`<Function>ErrorsAlarm`, ...).
#[test]
fn every_alarm_has_a_runbook() {
    let readme = read("infra/README.md");
    let runbook = readme
        .split("## Runbook")
        .nth(1)
        .expect("a Runbook section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut sections: Vec<(String, String)> = Vec::new();
    for part in runbook.split("\n### ").skip(1) {
        let (title, body) = part.split_once('\n').unwrap();
        sections.push((title.to_string(), body.to_string()));
    }
    let functions: Vec<String> = of_type("AWS::Lambda::Function")
        .into_iter()
        .map(|(n, _)| n.trim_end_matches("Function").to_string())
        .collect();
    for (name, _) in of_type("AWS::CloudWatch::Alarm") {
        let generic = functions.iter().find_map(|f| {
            ["ErrorsAlarm", "ThrottlesAlarm"]
                .iter()
                .find(|kind| *name == format!("{f}{kind}"))
                .map(|kind| format!("<Function>{kind}"))
        });
        let wanted = generic.unwrap_or_else(|| name.clone());
        let (title, body) = sections
            .iter()
            .find(|(title, _)| title.split(", ").any(|t| t.trim_matches('`') == wanted))
            .unwrap_or_else(|| {
                panic!("no runbook for {name} (a `### {wanted}` in infra/README.md)")
            });
        assert!(body.contains("What it means:"), "{title}");
        for n in 1..=3 {
            assert!(
                body.lines().any(|l| l.starts_with(&format!("{n}. `"))),
                "{title}: command {n} of the first three"
            );
        }
    }
}

/// Issue 31, 6: the longest admitted stage keeps the import bucket's name within S3's 63
/// characters in the regions with the longest names.
#[test]
fn the_longest_stage_keeps_the_bucket_name_within_s3s_limit() {
    let stage = &expanded()["Parameters"]["Stage"];
    let pattern = regex_lite::Regex::new(stage["AllowedPattern"].as_str().unwrap()).unwrap();
    let longest = (1..40)
        .filter(|n| pattern.is_match(&"a".repeat(*n)))
        .max()
        .expect("some stage is admitted");
    assert!(
        !pattern.is_match(&"a".repeat(20)),
        "a 20-character stage is refused"
    );
    let bucket = resource("ImportBucket")["Properties"]["BucketName"]["Fn::Sub"]
        .as_str()
        .unwrap()
        .to_string();
    for region in [
        "ap-southeast-5",
        "ap-northeast-3",
        "us-gov-west-1",
        "eusc-de-east-1",
    ] {
        let name = bucket
            .replace("${Stage}", &"a".repeat(longest))
            .replace("${AWS::AccountId}", "123456789012")
            .replace("${AWS::Region}", region);
        assert!(name.len() <= 63, "{name} is {} characters", name.len());
    }
}

/// Issue 31, 6: the fallback function authenticates as every function does, which writes the
/// key's last use and the rate bucket (UpdateItem).
#[test]
fn the_fallback_role_has_what_authentication_calls() {
    let actions = role_actions("FallbackRole");
    for action in [
        "dynamodb:BatchGetItem",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
    ] {
        assert!(actions.contains(action), "{action}");
    }
}

/// The actions of a role's first inline policy.
fn role_actions(role: &str) -> BTreeSet<String> {
    resource(role)["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["Action"].as_array().unwrap())
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Issue 41, 3: the change feed reads the ancestors a subscription's filter tests with
/// BatchGetItem (`Store::items_at`), beside its subscriptions Query and window UpdateItems.
/// Issue 42, 1: it writes history entries with BatchWriteItem (`Store::put_history`).
#[test]
fn the_change_feed_role_has_what_filters_read() {
    let actions = role_actions("ChangeFeedRole");
    for action in [
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ] {
        assert!(actions.contains(action), "{action}");
    }
}

/// Issue 60, 6: the functions that serve `DELETE …/history` delete a history's entries
/// with BatchWriteItem (`Store::erase_history`).
#[test]
fn the_history_functions_roles_may_erase_history() {
    for role in ["ProductsRole", "VariantsRole", "SkusRole", "AssetsRole"] {
        assert!(
            role_actions(role).contains("dynamodb:BatchWriteItem"),
            "{role}"
        );
    }
}

/// Issue 60, 6: the imports function, which serves `DELETE /exports/{id}`, may delete export
/// files.
#[test]
fn the_imports_role_may_erase_export_files() {
    assert!(role_actions("ImportsRole").contains("s3:DeleteObject"));
}

/// Issue 31, 6: infra/README.md states the delivery queue's redrive count as the template has it.
#[test]
fn the_readme_states_the_redrive_count_of_the_template() {
    let count = &resource("DeliveryQueue")["Properties"]["RedrivePolicy"]["maxReceiveCount"];
    assert!(read("infra/README.md").contains(&format!("`maxReceiveCount` ({count})")));
}

/// Issue 31, 6: a new table can be pre-warmed for a large first import; the outputs other
/// stacks wire to and the parameters an infrastructure team sets exist.
#[test]
fn the_stack_can_be_wired_into_an_infrastructure() {
    let table = &resource("CatalogTable")["Properties"];
    assert_eq!(
        table["WarmThroughput"],
        serde_json::json!({"Fn::If": ["WarmTable",
            {"WriteUnitsPerSecond": {"Ref": "TableWarmWritesPerSecond"}}, {"Ref": "AWS::NoValue"}]})
    );
    let warm = &expanded()["Parameters"]["TableWarmWritesPerSecond"];
    let pattern = regex_lite::Regex::new(warm["AllowedPattern"].as_str().unwrap()).unwrap();
    for ok in ["0", "4000", "40000", "100000"] {
        assert!(pattern.is_match(ok), "{ok}");
    }
    for bad in ["1", "3999", "", "-1"] {
        assert!(!pattern.is_match(bad), "{bad}");
    }
    let outputs = expanded()["Outputs"].as_object().unwrap();
    for output in [
        "ApiUrl",
        "ApiId",
        "TableName",
        "TableArn",
        "TableStreamArn",
        "DeliveryQueueArn",
        "DeadLetterQueueArn",
        "ImportQueueArn",
        "ImportDeadLetterQueueArn",
        "ChangeFeedFailuresQueueArn",
        "AlarmTopicArn",
        "AdminFunctionName",
    ] {
        assert!(outputs.contains_key(output), "output {output}");
    }
    for param in [
        "DomainName",
        "DomainCertificateArn",
        "AlarmTopicArn",
        "PermissionsBoundaryArn",
    ] {
        assert_eq!(
            expanded()["Parameters"][param]["Default"],
            "",
            "{param} is optional"
        );
    }
    // Every role takes the permissions boundary when one is given.
    for (name, role) in of_type("AWS::IAM::Role") {
        assert_eq!(
            role["Properties"]["PermissionsBoundary"],
            serde_json::json!({"Fn::If": ["HasPermissionsBoundary",
                {"Ref": "PermissionsBoundaryArn"}, {"Ref": "AWS::NoValue"}]}),
            "{name}"
        );
    }
    // The custom domain maps to the API's stage, which the SAM transform creates.
    let mapping = &resource("ApiDomainMapping");
    assert_eq!(mapping["Condition"], "HasDomain");
    let stage = mapping["Properties"]["Stage"]["Ref"].as_str().unwrap();
    assert_eq!(resource(stage)["Type"], "AWS::ApiGatewayV2::Stage");
    assert!(expanded()["Rules"]["DomainHasCertificate"].is_object());
}

/// Issue 60, 9: AWS destinations reach nothing until the operator names them. With
/// `EventDestinationArns` at its default (empty) the webhooks function's allow-list is empty
/// (every queue and bus is 400 at creation) and `EventDestinationRole` has no Allow at all;
/// with patterns, both are exactly those patterns, and the role is denied every queue of the
/// stack, which the function refuses as its own.
#[test]
fn aws_destinations_reach_nothing_until_the_operator_names_them() {
    use serde_json::json;
    let param = &expanded()["Parameters"]["EventDestinationArns"];
    assert_eq!(
        (&param["Type"], &param["Default"]),
        (&json!("CommaDelimitedList"), &json!(""))
    );
    let patterns = json!({"Ref": "EventDestinationArns"});
    assert_eq!(
        expanded()["Conditions"]["HasEventDestinations"],
        json!({"Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", patterns]}, ""]}]})
    );
    let env = &resource("WebhooksFunction")["Properties"]["Environment"]["Variables"];
    // the default joins to "": no pattern (domain/destinations.rs refuses every address)
    assert_eq!(
        env["CATALOG_EVENT_DESTINATIONS"],
        json!({"Fn::Join": [",", patterns]})
    );
    let statements = resource("EventDestinationRole")["Properties"]["Policies"][0]
        ["PolicyDocument"]["Statement"]
        .as_array()
        .unwrap();
    let allow = json!({"Effect": "Allow", "Action": ["sqs:SendMessage", "events:PutEvents"],
        "Resource": patterns});
    assert_eq!(
        statements[0],
        json!({"Fn::If": ["HasEventDestinations", allow, {"Ref": "AWS::NoValue"}]})
    );
    // no other Allow, conditioned or not
    for st in &statements[1..] {
        assert_eq!(st["Effect"], "Deny", "{st}");
    }
    let queues: BTreeSet<String> = of_type("AWS::SQS::Queue")
        .into_iter()
        .map(|(name, _)| json!({"Fn::GetAtt": [name, "Arn"]}).to_string())
        .collect();
    let denied: BTreeSet<String> = statements[1]["Resource"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    assert_eq!(statements[1]["Action"], json!(["sqs:SendMessage"]));
    assert_eq!(denied, queues);
    let own: BTreeSet<String> = env["CATALOG_OWN_RESOURCES"]["Fn::Join"][1]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    assert_eq!(own, queues);
}
