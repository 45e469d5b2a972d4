//! Where a subscription delivers (decisions.md, "Event destinations beyond HTTPS"): an
//! HTTPS URL, an EventBridge bus or an SQS queue, parsed from the API's `destination` object
//! and checked against what the deployment allows: ARN patterns of the template's
//! allow-list, never one of the stack's own resources.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A destination's type, as the API names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    #[default]
    Https,
    EventBridge,
    Sqs,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Https, Kind::EventBridge, Kind::Sqs];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Https => "https",
            Kind::EventBridge => "eventbridge",
            Kind::Sqs => "sqs",
        }
    }

    /// The field of the `destination` object that holds the address.
    pub fn field(self) -> &'static str {
        match self {
            Kind::Https => "url",
            Kind::EventBridge => "eventBusArn",
            Kind::Sqs => "queueUrl",
        }
    }

    /// AWS destinations are authenticated by IAM and must prove ownership first.
    pub fn is_aws(self) -> bool {
        self != Kind::Https
    }
}

/// What the deployment lets AWS destinations be (`CATALOG_EVENT_DESTINATIONS`, ARN patterns
/// with IAM's `*` and `?`; unset or empty, the template's default: none at all), and the
/// stack's own resources, never allowed (`CATALOG_OWN_RESOURCES`, and the ARNs of the
/// queues the configuration names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowed {
    pub patterns: Vec<String>,
    pub own: Vec<String>,
    /// The region of the deployment: a local emulator's queue URL names none.
    pub region: String,
    /// Local mode: a queue URL on a loopback address (the local emulator) is accepted.
    pub local: bool,
}

fn list(value: Option<String>) -> Vec<String> {
    value
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Allowed {
    /// Reads the allow-list and the stack's own resources through `lookup`; `queues` are
    /// the configuration's own queue URLs.
    pub fn from_lookup(
        lookup: &impl Fn(&str) -> Option<String>,
        local: bool,
        queues: &[Option<String>],
    ) -> Self {
        let region = lookup("AWS_REGION")
            .or_else(|| lookup("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let mut allowed = Self {
            patterns: list(lookup("CATALOG_EVENT_DESTINATIONS")),
            own: list(lookup("CATALOG_OWN_RESOURCES")),
            region,
            local,
        };
        let own_queues: Vec<String> = queues
            .iter()
            .flatten()
            .filter_map(|url| allowed.queue_arn(url).ok())
            .collect();
        allowed.own.extend(own_queues);
        allowed
    }

    /// The ARN of an SQS queue URL: `https://sqs.<region>.amazonaws.com/<account>/<name>`
    /// (or, in local mode, a loopback URL `http://127.0.0.1:<port>/<account>/<name>`).
    pub fn queue_arn(&self, raw: &str) -> Result<String, String> {
        self.queue(raw).map(|(arn, _)| arn)
    }

    /// A queue URL's ARN and the URL in its one written form (what is stored and sent).
    fn queue(&self, raw: &str) -> Result<(String, String), String> {
        let bad = || {
            format!(
                "field 'destination.queueUrl' must be an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<name>; got '{raw}'"
            )
        };
        let url = url::Url::parse(raw).map_err(|_| bad())?;
        let host = url.host_str().unwrap_or_default();
        let region = match (url.scheme(), host.strip_prefix("sqs.")) {
            ("https", Some(rest)) => rest
                .strip_suffix(".amazonaws.com.cn")
                .or_else(|| rest.strip_suffix(".amazonaws.com"))
                .filter(|r| is_region(r) && (r.starts_with("cn-") == rest.ends_with(".cn")))
                .ok_or_else(bad)?
                .to_string(),
            ("http" | "https", _) if self.local && is_loopback(host) => self.region.clone(),
            _ => return Err(bad()),
        };
        let local = !host.starts_with("sqs.");
        if url.query().is_some()
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
            || (url.port().is_some() && !local)
            || raw.trim() != raw
        {
            return Err(bad());
        }
        let path: Vec<&str> = url.path().trim_start_matches('/').split('/').collect();
        let [account, name] = path[..] else {
            return Err(bad());
        };
        if !is_account(account) || !is_queue_name(name) {
            return Err(bad());
        }
        let written = match local {
            true => format!(
                "{}://{}/{account}/{name}",
                url.scheme(),
                &url[url::Position::BeforeHost..url::Position::AfterPort]
            ),
            false => format!(
                "https://sqs.{region}.{}/{account}/{name}",
                domain_of(&region)
            ),
        };
        let partition = partition_of(&region);
        Ok((
            format!("arn:{partition}:sqs:{region}:{account}:{name}"),
            written,
        ))
    }

    /// Checks an ARN (a bus's, or a queue's from its URL) against the stack's own resources
    /// and the allow-list; the error names the rule.
    fn check(&self, field: &str, arn: &str) -> Result<(), String> {
        if self.own.iter().any(|own| own == arn) {
            return Err(format!(
                "field 'destination.{field}' names one of this deployment's own resources ({arn}); deliver to a queue or bus of yours"
            ));
        }
        if self.patterns.is_empty() {
            // the default: nothing until the operator names what tenants may deliver to
            return Err(format!(
                "field 'destination.{field}': this deployment delivers to no SQS queue or EventBridge bus (its operator allows none); use an HTTPS URL, or ask its operator to allow yours"
            ));
        }
        if !self.patterns.iter().any(|p| glob(p, arn)) {
            // the allow-list itself (accounts, naming schemes) is the operator's, not shown
            return Err(format!(
                "field 'destination.{field}': {arn} is outside what this deployment may deliver to; ask its operator which queues and buses it allows"
            ));
        }
        Ok(())
    }
}

/// A destination, parsed and allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Https { url: String },
    EventBridge { bus_arn: String },
    Sqs { queue_url: String, fifo: bool },
}

impl Destination {
    pub fn kind(&self) -> Kind {
        match self {
            Destination::Https { .. } => Kind::Https,
            Destination::EventBridge { .. } => Kind::EventBridge,
            Destination::Sqs { .. } => Kind::Sqs,
        }
    }

    /// The address as stored and shown: the URL, the bus ARN or the queue URL.
    pub fn address(&self) -> &str {
        match self {
            Destination::Https { url } => url,
            Destination::EventBridge { bus_arn } => bus_arn,
            Destination::Sqs { queue_url, .. } => queue_url,
        }
    }

    /// The stored form back: `kind` and `address` of a subscription.
    pub fn stored(kind: Kind, address: &str) -> Self {
        match kind {
            Kind::Https => Destination::Https {
                url: address.into(),
            },
            Kind::EventBridge => Destination::EventBridge {
                bus_arn: address.into(),
            },
            Kind::Sqs => Destination::Sqs {
                queue_url: address.into(),
                fifo: address.ends_with(".fifo"),
            },
        }
    }

    /// The `destination` object of a request body: its type and address, the address of
    /// an AWS destination checked against `allowed` (an HTTPS URL is checked by the caller,
    /// with the address guard).
    pub fn parse(value: &Value, allowed: &Allowed) -> Result<Self, String> {
        let types = Kind::ALL.map(Kind::as_str).join(", ");
        let obj = value.as_object().ok_or_else(|| {
            format!("field 'destination' must be an object with 'type' ({types})")
        })?;
        let kind = match obj.get("type").and_then(Value::as_str) {
            Some(t) => Kind::ALL
                .into_iter()
                .find(|k| k.as_str() == t)
                .ok_or_else(|| {
                    format!("field 'destination.type': '{t}' is not a destination type; types are {types}")
                })?,
            None => return Err(format!("field 'destination.type' is required ({types})")),
        };
        let field = kind.field();
        if let Some(other) = obj.keys().find(|k| *k != "type" && *k != field) {
            return Err(format!(
                "field 'destination.{other}' is not known for a {} destination; it takes 'type' and '{field}'",
                kind.as_str()
            ));
        }
        let address = obj
            .get(field)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("field 'destination.{field}' is required (a string)"))?;
        match kind {
            Kind::Https => Ok(Destination::Https {
                url: address.into(),
            }),
            Kind::EventBridge => {
                if !is_bus_arn(address) {
                    return Err(format!(
                        "field 'destination.eventBusArn' must be an event bus ARN, arn:aws:events:<region>:<account>:event-bus/<name>; got '{address}'"
                    ));
                }
                allowed.check(field, address)?;
                Ok(Destination::EventBridge {
                    bus_arn: address.into(),
                })
            }
            Kind::Sqs => {
                let (arn, queue_url) = allowed.queue(address)?;
                allowed.check(field, &arn)?;
                Ok(Destination::Sqs {
                    fifo: queue_url.ends_with(".fifo"),
                    queue_url,
                })
            }
        }
    }

    /// The region an AWS destination lives in (`None` for HTTPS; a local queue URL names
    /// none, so the deployment's).
    pub fn region(&self, allowed: &Allowed) -> Option<String> {
        match self {
            Destination::Https { .. } => None,
            Destination::EventBridge { bus_arn } => bus_arn.split(':').nth(3).map(String::from),
            Destination::Sqs { queue_url, .. } => allowed
                .queue_arn(queue_url)
                .ok()
                .and_then(|arn| arn.split(':').nth(3).map(String::from)),
        }
    }
}

/// The partition of a region: `aws-cn` (China), `aws-us-gov` (GovCloud), else `aws`.
fn partition_of(region: &str) -> &'static str {
    match region {
        r if r.starts_with("cn-") => "aws-cn",
        r if r.starts_with("us-gov-") => "aws-us-gov",
        _ => "aws",
    }
}

/// The domain of a region's endpoints.
fn domain_of(region: &str) -> &'static str {
    match partition_of(region) {
        "aws-cn" => "amazonaws.com.cn",
        _ => "amazonaws.com",
    }
}

/// `arn:aws:events:<region>:<account>:event-bus/<name>` (other partitions too).
fn is_bus_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let ["arn", partition, "events", region, account, resource] = parts[..] else {
        return false;
    };
    let name = resource.strip_prefix("event-bus/").unwrap_or_default();
    partition.starts_with("aws")
        && is_region(region)
        && is_account(account)
        && (1..=256).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
}

fn is_region(r: &str) -> bool {
    (6..=30).contains(&r.len())
        && r.split('-').count() >= 3
        && r.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_account(a: &str) -> bool {
    a.len() == 12 && a.chars().all(|c| c.is_ascii_digit())
}

fn is_queue_name(n: &str) -> bool {
    let base = n.strip_suffix(".fifo").unwrap_or(n);
    (1..=80).contains(&n.len())
        && !base.is_empty()
        && base
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// IAM's wildcard match: `*` any run of characters, `?` any one.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn allowed() -> Allowed {
        Allowed::from_lookup(
            &|name| {
                match name {
                "CATALOG_EVENT_DESTINATIONS" => Some(
                    "arn:aws:sqs:eu-west-1:111122223333:*, arn:aws:events:eu-west-1:111122223333:event-bus/*"
                        .into(),
                ),
                "AWS_REGION" => Some("eu-west-1".into()),
                "CATALOG_OWN_RESOURCES" => {
                    Some("arn:aws:events:eu-west-1:111122223333:event-bus/catalog-own".into())
                }
                _ => None,
            }
            },
            false,
            &[Some(
                "https://sqs.eu-west-1.amazonaws.com/111122223333/catalog-deliveries".into(),
            )],
        )
    }

    #[test]
    fn aws_destinations_parse_within_the_allow_list() {
        let a = allowed();
        let sqs = json!({"type": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/111122223333/orders.fifo"});
        assert_eq!(
            Destination::parse(&sqs, &a),
            Ok(Destination::Sqs {
                queue_url: "https://sqs.eu-west-1.amazonaws.com/111122223333/orders.fifo".into(),
                fifo: true
            })
        );
        let bus = json!({"type": "eventbridge", "eventBusArn": "arn:aws:events:eu-west-1:111122223333:event-bus/pim"});
        let parsed = Destination::parse(&bus, &a).unwrap();
        assert_eq!(parsed.region(&a).as_deref(), Some("eu-west-1"));
        let https = json!({"type": "https", "url": "https://example.com/h"});
        assert_eq!(Destination::parse(&https, &a).unwrap().kind(), Kind::Https);
    }

    #[test]
    fn the_stacks_own_and_foreign_resources_are_refused() {
        let a = allowed();
        let own = json!({"type": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/111122223333/catalog-deliveries"});
        let e = Destination::parse(&own, &a).unwrap_err();
        assert!(e.contains("this deployment's own resources"), "{e}");
        let own_bus = json!({"type": "eventbridge", "eventBusArn": "arn:aws:events:eu-west-1:111122223333:event-bus/catalog-own"});
        assert!(Destination::parse(&own_bus, &a).is_err());
        let other_account = json!({"type": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/999999999999/x"});
        let e = Destination::parse(&other_account, &a).unwrap_err();
        assert!(
            e.contains("outside what this deployment may deliver to"),
            "{e}"
        );
        let other_region = json!({"type": "eventbridge", "eventBusArn": "arn:aws:events:us-east-1:111122223333:event-bus/pim"});
        assert!(Destination::parse(&other_region, &a).is_err());
        // a loopback queue only in local mode
        // one written form: the host lowercased, no port, userinfo or space
        let upper = json!({"type": "sqs", "queueUrl": "https://SQS.eu-west-1.amazonaws.com/111122223333/q"});
        assert_eq!(
            Destination::parse(&upper, &a).unwrap().address(),
            "https://sqs.eu-west-1.amazonaws.com/111122223333/q"
        );
        for bad in [
            "https://sqs.eu-west-1.amazonaws.com:8443/111122223333/q",
            "https://:pw@sqs.eu-west-1.amazonaws.com/111122223333/q",
            "https://sqs.eu-west-1.amazonaws.com/111122223333/q.fifo ",
        ] {
            let v = json!({"type": "sqs", "queueUrl": bad});
            assert!(Destination::parse(&v, &a).is_err(), "{bad}");
        }
        let local = json!({"type": "sqs", "queueUrl": "http://127.0.0.1:4566/111122223333/q"});
        assert!(Destination::parse(&local, &a).is_err());
        let local_mode = Allowed { local: true, ..a };
        assert!(Destination::parse(&local, &local_mode).is_ok());
    }

    #[test]
    fn by_default_no_queue_or_bus_is_allowed() {
        // the template's default (`EventDestinationArns` empty) sets the variable empty
        for value in [None, Some(""), Some(" , ")] {
            let a = Allowed::from_lookup(
                &|name| match name {
                    "CATALOG_EVENT_DESTINATIONS" => value.map(String::from),
                    "AWS_REGION" => Some("eu-west-1".into()),
                    _ => None,
                },
                false,
                &[],
            );
            assert!(a.patterns.is_empty(), "{value:?}");
            for (destination, field) in [
                (
                    json!({"type": "sqs", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/111122223333/catalog-prod-events-orders"}),
                    "queueUrl",
                ),
                (
                    json!({"type": "eventbridge", "eventBusArn": "arn:aws:events:eu-west-1:111122223333:event-bus/default"}),
                    "eventBusArn",
                ),
            ] {
                assert_eq!(
                    Destination::parse(&destination, &a),
                    Err(format!("field 'destination.{field}': this deployment delivers to no SQS queue or EventBridge bus (its operator allows none); use an HTTPS URL, or ask its operator to allow yours"))
                );
            }
            // HTTPS is not the allow-list's (the address guard checks it)
            let https = json!({"type": "https", "url": "https://example.com/h"});
            assert!(Destination::parse(&https, &a).is_ok());
        }
    }

    #[test]
    fn malformed_destinations_name_their_problem() {
        let a = allowed();
        let cases = [
            (json!("sqs"), "field 'destination' must be an object"),
            (
                json!({"queueUrl": "x"}),
                "field 'destination.type' is required",
            ),
            (json!({"type": "sns"}), "'sns' is not a destination type"),
            (
                json!({"type": "sqs"}),
                "field 'destination.queueUrl' is required",
            ),
            (
                json!({"type": "sqs", "queueUrl": "https://example.com/1/q"}),
                "must be an SQS queue URL",
            ),
            (
                json!({"type": "sqs", "url": "x", "queueUrl": "y"}),
                "field 'destination.url' is not known",
            ),
            (
                json!({"type": "eventbridge", "eventBusArn": "arn:aws:sqs:eu-west-1:111122223333:q"}),
                "must be an event bus ARN",
            ),
        ];
        for (value, want) in cases {
            let e = Destination::parse(&value, &a).unwrap_err();
            assert!(e.contains(want), "{value}: {e}");
        }
    }

    #[test]
    fn queues_of_other_partitions_have_their_arns() {
        let a = Allowed {
            patterns: vec!["arn:*:sqs:*:111122223333:*".into()],
            ..allowed()
        };
        let gov = json!({"type": "sqs", "queueUrl": "https://sqs.us-gov-west-1.amazonaws.com/111122223333/q"});
        assert!(Destination::parse(&gov, &a).is_ok());
        assert_eq!(
            a.queue_arn("https://sqs.cn-north-1.amazonaws.com.cn/111122223333/q")
                .as_deref(),
            Ok("arn:aws-cn:sqs:cn-north-1:111122223333:q")
        );
        assert_eq!(
            a.queue_arn("https://sqs.us-gov-west-1.amazonaws.com/111122223333/q")
                .as_deref(),
            Ok("arn:aws-us-gov:sqs:us-gov-west-1:111122223333:q")
        );
        // a China region only under its own domain
        assert!(a
            .queue_arn("https://sqs.cn-north-1.amazonaws.com/111122223333/q")
            .is_err());
    }

    #[test]
    fn patterns_match_like_iam() {
        assert!(glob("arn:aws:sqs:*:1:*", "arn:aws:sqs:eu-west-1:1:q"));
        assert!(glob(
            "arn:aws:sqs:eu-west-?:1:q",
            "arn:aws:sqs:eu-west-1:1:q"
        ));
        assert!(!glob(
            "arn:aws:sqs:eu-west-1:1:q",
            "arn:aws:sqs:eu-west-1:1:q2"
        ));
        assert!(!glob(
            "arn:aws:sqs:*:1:*",
            "arn:aws:events:eu-west-1:1:event-bus/x"
        ));
    }
}
