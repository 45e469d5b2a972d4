//! CloudWatch's embedded metric format: a JSON log line that CloudWatch Logs turns into
//! metrics, here one per organization and flush, with the organization as the dimension
//! (so an operator can graph and sort the tenants). Written to stdout, beside the logs.

use super::Tally;
use serde_json::{json, Map, Value};

/// The line for `org`'s `tally` at `timestamp_ms`, in `namespace`.
pub fn line(namespace: &str, org: &str, tally: &Tally, timestamp_ms: i64) -> String {
    let named = tally.named();
    let metrics: Vec<Value> = named
        .iter()
        .map(|(name, _)| json!({"Name": metric_name(name), "Unit": "Count"}))
        .collect();
    let mut root = Map::new();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["Organization"]],
                "Metrics": metrics,
            }],
        }),
    );
    root.insert("Organization".into(), json!(org));
    for (name, value) in named {
        root.insert(metric_name(name), value);
    }
    Value::Object(root).to_string()
}

/// `clientErrors` → `ClientErrors`.
fn metric_name(api_name: &str) -> String {
    let mut chars = api_name.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_every_metric_and_its_organization() {
        let mut t = Tally::request(200, 2500);
        t.add(&Tally::request(429, 0));
        let v: Value =
            serde_json::from_str(&line("Catalog/prod", "org_1", &t, 1_700_000_000_000)).unwrap();
        assert_eq!(v["_aws"]["Timestamp"], 1_700_000_000_000i64);
        let spec = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(spec["Namespace"], "Catalog/prod");
        assert_eq!(spec["Dimensions"], json!([["Organization"]]));
        let names: Vec<&str> = spec["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Requests",
                "Refused",
                "ClientErrors",
                "ServerErrors",
                "CapacityUnits",
                "DeliveryAttempts",
                "FailedAttempts"
            ]
        );
        assert_eq!(
            (
                &v["Organization"],
                &v["Requests"],
                &v["Refused"],
                &v["CapacityUnits"]
            ),
            (&json!("org_1"), &json!(2), &json!(1), &json!(2.5))
        );
    }
}
