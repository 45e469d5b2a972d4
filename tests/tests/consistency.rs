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
    assert_eq!(
        declared, expected,
        "regenerate with `catalog-admin router-toml`"
    );
}

#[test]
fn the_openapi_file_is_the_generated_document() {
    assert_eq!(
        read("docs/openapi.yaml"),
        catalog::api::openapi::yaml(),
        "docs/openapi.yaml differs from the route tables: regenerate with `catalog-admin openapi > docs/openapi.yaml`"
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
    let served: BTreeSet<String> = catalog::api::FUNCTIONS
        .iter()
        .flat_map(|api| api.routes().map(|r| format!("{} /v1{}", r.method, r.path)))
        .collect();
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
        ("attributes", "events/attributes/create-family.json", 201),
        ("attributes", "events/attributes/get-family.json", 200),
        ("attributes", "events/attributes/list-families.json", 200),
        ("attributes", "events/attributes/create-language.json", 201),
        ("attributes", "events/attributes/list-languages.json", 200),
        ("attributes", "events/attributes/create-channel.json", 201),
        ("attributes", "events/attributes/list-channels.json", 200),
        (
            "attributes",
            "events/attributes/create-completeness-profile.json",
            201,
        ),
        (
            "attributes",
            "events/attributes/get-completeness-profile.json",
            200,
        ),
        (
            "attributes",
            "events/attributes/list-completeness-profiles.json",
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
        ("imports", "events/imports/list-imports.json", 200),
        // Not HTTP: a batch whose records all succeed reports no failures (the upload's
        // import does not exist: nothing to run).
        ("import-worker", "events/import-worker/s3-upload.json", 0),
        // Not HTTP: a batch whose records all succeed reports no failures.
        ("change-feed", "events/change-feed/stream-batch.json", 0),
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
    EXPANDED.get_or_init(|| {
        let out = std::env::temp_dir().join(format!(
            "catalog-template-{}.expanded.json",
            std::process::id()
        ));
        let status = std::process::Command::new(repo_root().join("scripts/expand-template.sh"))
            .arg(repo_root().join("infra/template.yaml"))
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("scripts/expand-template.sh runs");
        assert!(status.success(), "expanding infra/template.yaml failed");
        let text = std::fs::read_to_string(&out).expect("expanded template");
        let _ = std::fs::remove_file(&out);
        serde_json::from_str(&text).expect("expanded template is JSON")
    })
}

fn resource(name: &str) -> &'static Value {
    let r = &expanded()["Resources"][name];
    assert!(r.is_object(), "no resource {name} in the expanded template");
    r
}

fn of_type(kind: &str) -> Vec<(&'static String, &'static Value)> {
    expanded()["Resources"]
        .as_object()
        .expect("resources")
        .iter()
        .filter(|(_, r)| r["Type"] == kind)
        .collect()
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
        serde_json::json!({"Fn::Sub": "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/${FallbackFunction.Arn}/invocations"})
    );
    assert_eq!(
        any["x-amazon-apigateway-integration"]["payloadFormatVersion"],
        "2.0"
    );
    // API Gateway may invoke it for any method and path of the API.
    let allowed: Vec<&Value> = of_type("AWS::Lambda::Permission")
        .into_iter()
        .filter(|(_, p)| p["Properties"]["FunctionName"]["Ref"] == "FallbackFunction")
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
    // Every alarm publishes to that topic.
    for (name, alarm) in of_type("AWS::CloudWatch::Alarm") {
        assert_eq!(
            alarm["Properties"]["AlarmActions"],
            serde_json::json!([{"Ref": "AlarmTopic"}]),
            "{name}"
        );
    }
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
];

#[test]
fn every_alarm_names_a_metric_that_exists() {
    let filters = of_type("AWS::Logs::MetricFilter");
    let alarms = of_type("AWS::CloudWatch::Alarm");
    let mut seen = BTreeSet::new();
    for (name, alarm) in &alarms {
        let p = &alarm["Properties"];
        let namespace = &p["Namespace"];
        let metric = p["MetricName"].as_str().expect("metric name");
        let mut dims: Vec<&str> = p["Dimensions"]
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
    // The alarms issue 20 asked for, beside every function's errors and throttles.
    for wanted in [
        "AWS/ApiGateway 5xx",
        "AWS/Lambda IteratorAge",
        "AWS/SQS ApproximateAgeOfOldestMessage",
        "AWS/SQS ApproximateNumberOfMessagesVisible",
        "custom ImportRunsDeferred",
    ] {
        assert!(seen.contains(wanted), "no alarm on {wanted}: {seen:?}");
    }
    let functions = of_type("AWS::Lambda::Function").len();
    assert_eq!(functions, 15);
    assert_eq!(alarms.len(), 2 * functions + 8);
    // The deferred-import metric counts a line the worker really logs.
    assert!(read("shared/src/imports/worker.rs").contains("\"import deferred\""));
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
        assert_eq!(
            value("tags"),
            format!("\"app=\\\"catalog\\\" stage=\\\"{stage}\\\"\"")
        );
        let package = config
            .split(&format!("[{stage}.package.parameters]\n"))
            .nth(1)
            .and_then(|rest| rest.split("\n[").next())
            .unwrap_or_else(|| panic!("no [{stage}.package.parameters]"));
        assert!(
            package.lines().any(|l| l == "resolve_s3 = true"),
            "{stage}: sam package uploads through SAM's bucket"
        );
        let overrides = value("parameter_overrides");
        let overrides = overrides.trim_matches('"').replace("\\\"", "\"");
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
