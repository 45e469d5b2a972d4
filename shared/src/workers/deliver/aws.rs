//! Deliveries to AWS destinations: one PutEvents entry to an EventBridge bus, or one
//! SendMessage to an SQS queue (FIFO: a message group per entity, the delivery id as
//! deduplication id). Success is AWS accepting it; a refusal is logged with its AWS error
//! code. Clients are built once per region, with the role of `CATALOG_DESTINATION_ROLE_ARN`
//! when set (it may write only the template's allow-list), one attempt each (the delivery
//! schedule retries) and the delivery timeout.

use crate::domain::destinations::{Allowed, Destination};
use crate::webhooks::WebhookConfig;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::MessageAttributeValue;
use std::collections::HashMap;
use tokio::sync::{Mutex, OnceCell};

/// What one message carries besides its body.
pub(super) struct Envelope<'a> {
    pub org: &'a str,
    /// The event name: EventBridge's `DetailType`, SQS's `catalog-event` attribute.
    pub event: &'a str,
    pub delivery_id: &'a str,
    /// `<entity_type>:<identifier>`: a FIFO queue's message group.
    pub group: String,
}

/// Most regions a process keeps clients for at once (an allow-list with a wildcard region
/// admits any name that looks like one): past it, the region used least recently gives its
/// place up, so names one tenant makes up cost that tenant a client built again, never
/// another tenant's delivery.
const MAX_REGIONS: usize = 16;

/// Clients by region, at most [`MAX_REGIONS`], the least recently used evicted first.
struct RegionCache<T> {
    entries: HashMap<String, (T, u64)>,
    tick: u64,
}

impl<T: Clone> RegionCache<T> {
    fn new() -> Self {
        Self {
            entries: HashMap::new(),
            tick: 0,
        }
    }

    fn get(&mut self, region: &str) -> Option<T> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(region).map(|(value, used)| {
            *used = tick;
            value.clone()
        })
    }

    fn insert(&mut self, region: String, value: T) {
        if self.entries.len() >= MAX_REGIONS && !self.entries.contains_key(&region) {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(r, _)| r.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.tick += 1;
        self.entries.insert(region, (value, self.tick));
    }
}

#[derive(Clone)]
struct Clients {
    sqs: aws_sdk_sqs::Client,
    events: aws_sdk_eventbridge::Client,
}

/// The AWS clients of the delivery worker, built on first use.
pub(super) struct AwsSenders {
    shared: OnceCell<aws_config::SdkConfig>,
    by_region: Mutex<RegionCache<Clients>>,
    role: Option<String>,
    allowed: Allowed,
    timeout: std::time::Duration,
    connect_timeout: std::time::Duration,
}

impl AwsSenders {
    pub fn new(config: &WebhookConfig) -> Self {
        Self {
            shared: OnceCell::new(),
            by_region: Mutex::new(RegionCache::new()),
            role: config.destination_role.clone(),
            allowed: config.allowed.clone(),
            timeout: config.timeout,
            connect_timeout: config.connect_timeout,
        }
    }

    async fn clients(&self, region: String) -> Result<Clients, String> {
        let shared = self.shared.get_or_init(aws_config::load_from_env).await;
        let mut by_region = self.by_region.lock().await;
        if let Some(c) = by_region.get(&region) {
            return Ok(c);
        }
        let mut builder = shared.to_builder();
        builder.set_region(Some(aws_config::Region::new(region.clone())));
        builder.set_retry_config(Some(
            aws_config::retry::RetryConfig::standard().with_max_attempts(1),
        ));
        builder.set_timeout_config(Some(
            aws_config::timeout::TimeoutConfig::builder()
                .operation_timeout(self.timeout)
                .connect_timeout(self.connect_timeout)
                .build(),
        ));
        if let Some(role) = &self.role {
            let provider = aws_config::sts::AssumeRoleProvider::builder(role)
                .session_name("catalog-deliveries")
                .configure(shared)
                .build()
                .await;
            builder.set_credentials_provider(Some(
                aws_sdk_sqs::config::SharedCredentialsProvider::new(provider),
            ));
        }
        let config = builder.build();
        let clients = Clients {
            sqs: aws_sdk_sqs::Client::new(&config),
            events: aws_sdk_eventbridge::Client::new(&config),
        };
        by_region.insert(region, clients.clone());
        Ok(clients)
    }

    /// Sends `body` to `destination`: `Ok` when AWS accepted it, else why not (with the
    /// AWS error code when AWS gave one).
    pub async fn send(
        &self,
        destination: &Destination,
        body: &str,
        e: &Envelope<'_>,
    ) -> Result<(), String> {
        let Some(region) = destination.region(&self.allowed) else {
            return Err("not an AWS destination".into());
        };
        if self.role.is_none() && !self.allowed.local {
            // never under the function's own role, which may write the stack's queues
            return Err("no destination role is configured (CATALOG_DESTINATION_ROLE_ARN)".into());
        }
        let clients = self.clients(region).await?;
        let body = &*aws_text(body);
        match destination {
            Destination::EventBridge { bus_arn } => {
                let entry = PutEventsRequestEntry::builder()
                    .event_bus_name(bus_arn)
                    .source(format!("catalog.{}", e.org))
                    .detail_type(e.event)
                    .detail(body)
                    .build();
                let out = clients
                    .events
                    .put_events()
                    .entries(entry)
                    .send()
                    .await
                    .map_err(|err| failed("PutEvents", &err, err.code()))?;
                if out.failed_entry_count() > 0 {
                    let code = out.entries().first().and_then(|x| x.error_code());
                    return Err(refused("PutEvents", code.or(Some("FailedEntry")), true));
                }
                Ok(())
            }
            Destination::Sqs { queue_url, fifo } => {
                let attribute = |v: &str| {
                    MessageAttributeValue::builder()
                        .data_type("String")
                        .string_value(v)
                        .build()
                        .map_err(|_| "a message attribute could not be built".to_string())
                };
                let mut send = clients
                    .sqs
                    .send_message()
                    .queue_url(queue_url)
                    .message_body(body)
                    .message_attributes("catalog-event", attribute(e.event)?)
                    .message_attributes("catalog-delivery-id", attribute(e.delivery_id)?);
                if *fifo {
                    send = send
                        .message_group_id(&e.group)
                        .message_deduplication_id(e.delivery_id);
                }
                send.send()
                    .await
                    .map(|_| ())
                    .map_err(|err| failed("SendMessage", &err, err.code()))
            }
            Destination::Https { .. } => Err("not an AWS destination".into()),
        }
    }
}

/// `body` (JSON text) as SQS and EventBridge take it: both refuse any character outside
/// XML's (`#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`), which
/// leaves U+FFFE and U+FFFF of what JSON text can hold raw (serde_json escapes the
/// control characters; Rust strings hold no surrogates). They can stand only inside a JSON
/// string, so each is written as its `\uXXXX` escape: the same JSON value, a body AWS takes.
pub(super) fn aws_text(body: &str) -> std::borrow::Cow<'_, str> {
    let refused = |c: char| matches!(c, '\u{FFFE}' | '\u{FFFF}');
    if !body.contains(refused) {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len() + 8);
    for c in body.chars() {
        match c {
            c if refused(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A FIFO queue's message group of an entity: `<entity_type>:<identifier>`, or, when that
/// is not what SQS takes (at most 128 printable ASCII characters), `<entity_type>:` and the
/// identifier's SHA-256 in hex (the same entity, the same group).
pub(super) fn message_group(entity_type: &str, identifier: &str) -> String {
    let group = format!("{entity_type}:{identifier}");
    if group.len() <= 128 && group.bytes().all(|b| b.is_ascii_graphic()) {
        return group;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(identifier.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{entity_type}:{hex}")
}

/// [`refused`] of an SDK error with its AWS error code `code`. When AWS gave no answer (it
/// could not be reached, or the destination role could not be assumed), the operators'
/// log gets the whole error chain, the STS error code and message of a failed AssumeRole
/// included; the delivery log gets the short reason only.
fn failed<E, R>(op: &str, err: &aws_sdk_sqs::error::SdkError<E, R>, code: Option<&str>) -> String
where
    E: std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let answered = err.as_service_error().is_some();
    if !answered {
        tracing::warn!(
            operation = op,
            error = %aws_sdk_sqs::error::DisplayErrorContext(err),
            "AWS destination not reached"
        );
    }
    refused(op, code, answered)
}

/// A refusal for the delivery log: the operation and AWS's error code, never its message
/// (which may name our role or account).
fn refused(op: &str, code: Option<&str>, answered: bool) -> String {
    match (code, answered) {
        (Some(code), _) => format!("{op} refused: {code}"),
        (None, true) => format!("{op} refused"),
        (None, false) => format!(
            "{op} failed: AWS could not be reached in time, or the destination role could not be assumed"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn refusals_name_the_aws_error_code() {
        assert_eq!(
            refused("SendMessage", Some("AccessDenied"), true),
            "SendMessage refused: AccessDenied"
        );
        assert_eq!(
            refused("PutEvents", None, false),
            "PutEvents failed: AWS could not be reached in time, or the destination role could not be assumed"
        );
    }

    #[test]
    fn made_up_regions_evict_the_least_recently_used_never_refuse_a_delivery() {
        let mut cache = super::RegionCache::new();
        cache.insert("eu-west-1".to_string(), 1);
        for i in 0..100 {
            // a tenant's made-up regions, each kept in turn
            cache.insert(format!("xx-fake-{i}"), i);
            // another tenant's region, in use all along, stays
            assert_eq!(cache.get("eu-west-1"), Some(1));
            assert!(cache.entries.len() <= super::MAX_REGIONS);
        }
        assert_eq!(cache.entries.len(), super::MAX_REGIONS);
        assert_eq!(cache.get("xx-fake-0"), None);
        assert_eq!(cache.get("xx-fake-99"), Some(99));
        // a region evicted is built again on its next use
        cache.insert("xx-fake-0".to_string(), 0);
        assert_eq!(cache.get("xx-fake-0"), Some(0));
        assert_eq!(cache.get("eu-west-1"), Some(1));
    }

    #[test]
    fn bodies_hold_no_character_aws_refuses() {
        let body = serde_json::json!({"identifier": "a\u{FFFE}b\u{FFFF}", "name": "ä\u{FFFD}"})
            .to_string();
        let sent = super::aws_text(&body);
        // U+FFFD is a character AWS takes: it stays as it was
        let expected = r#"{"identifier":"a\ufffeb\uffff","name":"ä"#.to_string() + "\u{FFFD}\"}";
        assert_eq!(sent, expected);
        // the same JSON value
        let back: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(back["identifier"], "a\u{FFFE}b\u{FFFF}");
        assert!(matches!(
            super::aws_text("{}"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_message_group_is_what_sqs_takes() {
        assert_eq!(
            super::message_group("sku", "chair-oak-m"),
            "sku:chair-oak-m"
        );
        let odd = super::message_group("product", "stuhl grün");
        assert_eq!(odd.len(), "product:".len() + 64);
        assert_eq!(odd, super::message_group("product", "stuhl grün"));
        assert!(super::message_group("product", &"x".repeat(200)).len() <= 128);
    }
}
