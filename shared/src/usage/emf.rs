//! CloudWatch's embedded metric format: a JSON log line that CloudWatch Logs turns into
//! metrics. What a flush publishes depends on the metrics switch (`CATALOG_ORG_METRICS`, the
//! template's `OrgMetrics`): nothing, one line of the deployment's totals (7 metrics without
//! dimensions), or one line per organization with the organization as the dimension (7
//! metrics per organization, so an operator can graph and sort the tenants; each is billed
//! as a custom metric: infra/README.md, "What it costs"). Written to stdout, beside the logs.

use super::Tally;
use serde_json::{json, Map, Value};

/// Which usage metrics the functions publish (`CATALOG_ORG_METRICS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OrgMetrics {
    /// None: usage is counted in the table only (`GET /v1/usage`).
    Off,
    /// The deployment's totals: the 7 metrics, without dimensions.
    #[default]
    Totals,
    /// The 7 metrics of every organization that was counted, dimension `Organization`.
    PerOrganization,
}

impl OrgMetrics {
    /// `off`, `totals` or `per-organization` (the template's allowed values); anything else
    /// is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim() {
            "off" => Some(Self::Off),
            "totals" => Some(Self::Totals),
            "per-organization" => Some(Self::PerOrganization),
            _ => None,
        }
    }
}

/// Where the usage metrics go, and which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metrics {
    /// The CloudWatch namespace (`CATALOG_METRICS_NAMESPACE`; the template sets
    /// `Catalog/<stage>`).
    pub namespace: String,
    pub scope: OrgMetrics,
}

impl Metrics {
    /// The metrics of the environment: none without `CATALOG_METRICS_NAMESPACE` (local
    /// stacks, tests); `CATALOG_ORG_METRICS` unset or unknown is `totals`, the template's
    /// default and the one whose cost does not grow with the organizations.
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Option<Self> {
        let namespace = lookup("CATALOG_METRICS_NAMESPACE").filter(|v| !v.trim().is_empty())?;
        let scope = lookup("CATALOG_ORG_METRICS")
            .and_then(|v| OrgMetrics::parse(&v))
            .unwrap_or_default();
        Some(Self { namespace, scope })
    }

    /// The lines of one flush: `flushed` holds each organization's counts the flush added
    /// to the table (an organization may appear once per day it counted).
    pub fn lines<'a>(
        &self,
        flushed: impl IntoIterator<Item = (&'a str, &'a Tally)>,
        timestamp_ms: i64,
    ) -> Vec<String> {
        match self.scope {
            OrgMetrics::Off => Vec::new(),
            OrgMetrics::Totals => {
                let mut total = Tally::default();
                for (_, tally) in flushed {
                    total.add(tally);
                }
                if total.is_empty() {
                    return Vec::new();
                }
                vec![document(&self.namespace, None, &total, timestamp_ms)]
            }
            OrgMetrics::PerOrganization => flushed
                .into_iter()
                .map(|(org, tally)| document(&self.namespace, Some(org), tally, timestamp_ms))
                .collect(),
        }
    }
}

/// One EMF document: the tally's 7 metrics, with `org` as the `Organization` dimension, or
/// with no dimension at all (an empty dimension set).
fn document(namespace: &str, org: Option<&str>, tally: &Tally, timestamp_ms: i64) -> String {
    let named = tally.named();
    let metrics: Vec<Value> = named
        .iter()
        .map(|(name, _)| json!({"Name": metric_name(name), "Unit": "Count"}))
        .collect();
    let dimensions = match org {
        Some(_) => json!([["Organization"]]),
        None => json!([[]]),
    };
    let mut root = Map::new();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": dimensions,
                "Metrics": metrics,
            }],
        }),
    );
    if let Some(org) = org {
        root.insert("Organization".into(), json!(org));
    }
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

    const NAMES: [&str; 7] = [
        "Requests",
        "Refused",
        "ClientErrors",
        "ServerErrors",
        "CapacityUnits",
        "DeliveryAttempts",
        "FailedAttempts",
    ];

    fn metrics(scope: OrgMetrics) -> Metrics {
        Metrics {
            namespace: "Catalog/prod".into(),
            scope,
        }
    }

    /// One flush of two organizations: `org_1` made two calls (one refused, 2.5 capacity
    /// units), `org_2` one call (0.5 units) and a failed delivery attempt.
    fn flushed() -> [(&'static str, Tally); 2] {
        let mut one = Tally::request(200, 2500);
        one.add(&Tally::request(429, 0));
        let mut two = Tally::request(404, 500);
        two.add(&Tally::delivery(false));
        [("org_1", one), ("org_2", two)]
    }

    fn lines(scope: OrgMetrics) -> Vec<Value> {
        let flushed = flushed();
        metrics(scope)
            .lines(flushed.iter().map(|(o, t)| (*o, t)), 1_700_000_000_000)
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Every CloudWatch metric a set of lines defines: (namespace, name, dimension values).
    fn defined(lines: &[Value]) -> std::collections::BTreeSet<(String, String, Vec<String>)> {
        let mut out = std::collections::BTreeSet::new();
        for v in lines {
            for spec in v["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
                for set in spec["Dimensions"].as_array().unwrap() {
                    let values: Vec<String> = set
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| v[d.as_str().unwrap()].as_str().unwrap().to_string())
                        .collect();
                    for m in spec["Metrics"].as_array().unwrap() {
                        out.insert((
                            spec["Namespace"].as_str().unwrap().to_string(),
                            m["Name"].as_str().unwrap().to_string(),
                            values.clone(),
                        ));
                    }
                }
            }
        }
        out
    }

    fn names(spec: &Value) -> Vec<&str> {
        spec["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn off_publishes_no_metric() {
        assert_eq!(lines(OrgMetrics::Off), Vec::<Value>::new());
    }

    #[test]
    fn totals_publish_seven_metrics_without_dimensions_whatever_the_organizations() {
        let lines = lines(OrgMetrics::Totals);
        assert_eq!(lines.len(), 1);
        let v = &lines[0];
        assert_eq!(v["_aws"]["Timestamp"], 1_700_000_000_000i64);
        let specs = v["_aws"]["CloudWatchMetrics"].as_array().unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0]["Namespace"], "Catalog/prod");
        assert_eq!(specs[0]["Dimensions"], json!([[]]));
        assert_eq!(names(&specs[0]), NAMES);
        assert_eq!(v.get("Organization"), None);
        // the two organizations' counts, added up
        assert_eq!(
            [
                &v["Requests"],
                &v["Refused"],
                &v["ClientErrors"],
                &v["ServerErrors"],
                &v["CapacityUnits"],
                &v["DeliveryAttempts"],
                &v["FailedAttempts"]
            ],
            [
                &json!(3),
                &json!(1),
                &json!(1),
                &json!(0),
                &json!(3.0),
                &json!(1),
                &json!(1)
            ]
        );
        assert_eq!(defined(&lines).len(), 7);
    }

    #[test]
    fn per_organization_publishes_seven_metrics_per_organization() {
        let lines = lines(OrgMetrics::PerOrganization);
        assert_eq!(lines.len(), 2);
        for (v, org) in lines.iter().zip(["org_1", "org_2"]) {
            let specs = v["_aws"]["CloudWatchMetrics"].as_array().unwrap();
            assert_eq!(specs.len(), 1);
            assert_eq!(specs[0]["Namespace"], "Catalog/prod");
            assert_eq!(specs[0]["Dimensions"], json!([["Organization"]]));
            assert_eq!(names(&specs[0]), NAMES);
            assert_eq!(v["Organization"], org);
        }
        assert_eq!(
            (
                &lines[0]["Requests"],
                &lines[0]["Refused"],
                &lines[0]["CapacityUnits"]
            ),
            (&json!(2), &json!(1), &json!(2.5))
        );
        assert_eq!(defined(&lines).len(), 14, "7 per organization");
    }

    #[test]
    fn nothing_flushed_publishes_nothing() {
        for scope in [
            OrgMetrics::Off,
            OrgMetrics::Totals,
            OrgMetrics::PerOrganization,
        ] {
            assert_eq!(metrics(scope).lines([], 0), Vec::<String>::new());
        }
    }

    #[test]
    fn the_switch_takes_the_template_values_and_defaults_to_totals() {
        let of = |namespace: Option<&str>, switch: Option<&str>| {
            let (namespace, switch) = (namespace.map(String::from), switch.map(String::from));
            Metrics::from_lookup(&move |name: &str| match name {
                "CATALOG_METRICS_NAMESPACE" => namespace.clone(),
                "CATALOG_ORG_METRICS" => switch.clone(),
                _ => None,
            })
        };
        let scope = |switch| of(Some("Catalog/prod"), switch).map(|m| m.scope);
        assert_eq!(scope(Some("off")), Some(OrgMetrics::Off));
        assert_eq!(scope(Some("totals")), Some(OrgMetrics::Totals));
        assert_eq!(
            scope(Some("per-organization")),
            Some(OrgMetrics::PerOrganization)
        );
        assert_eq!(scope(None), Some(OrgMetrics::Totals));
        assert_eq!(scope(Some("Per-Organization")), Some(OrgMetrics::Totals));
        assert_eq!(scope(Some("")), Some(OrgMetrics::Totals));
        assert_eq!(of(None, Some("per-organization")), None);
        assert_eq!(of(Some(" "), Some("totals")), None);
        assert_eq!(
            of(Some("Catalog/prod"), None).map(|m| m.namespace),
            Some("Catalog/prod".to_string())
        );
    }
}
