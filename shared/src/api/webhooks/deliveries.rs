//! The delivery log of a subscription, and deliveries sent by hand (replays and test events), counted against the organization's hourly quota.

use super::*;
use crate::domain::entity_types::EntityType;
use crate::http::query::PageParams;
use crate::http::query::{query_values, QueryValue};

/// A delivery log entry as served.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Delivery")]
struct DeliveryView<'a> {
    /// The delivery id: the payload's `id`, the same on every attempt
    id: &'a str,
    event: &'a str,
    identifier: &'a str,
    entity_type: &'a str,
    occurred_at: Timestamp,
    status: DeliveryStatus,
    attempts: u32,
    last_status_code: Option<u16>,
    last_error: Option<&'a str>,
    next_attempt_at: Option<Timestamp>,
    /// The delivery this one replays
    replay_of: Option<&'a str>,
    created_at: Timestamp,
    updated_at: Timestamp,
    attempt_log: &'a [Attempt],
    /// The changes to the entity coalesced into this delivery within the coalescing
    /// window; 0 for replays and test events
    changes: u32,
    /// Only for a subscription with a `filter`: the payload's `match` (`outside`: matched
    /// neither before nor after; cancelled, not sent)
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "set_match")]
    matched: Option<&'static str>,
}

fn set_match(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"enum": ["entered", "stayed", "left", "outside"]})
}

/// What sending a test event answers.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TestEvent")]
struct TestEventView<'a> {
    /// The test delivery's id, as in the delivery log and the payload
    delivery_id: &'a str,
}

/// The answer types of the delivery log, for the OpenAPI document.
pub(crate) const DELIVERY_ANSWERS: &[crate::http::doc::RequestSchema] = &[
    schema::answer::<DeliveryView>,
    schema::answer::<TestEventView>,
];

/// A delivery log entry as served.
pub fn render_delivery(d: &Delivery) -> Value {
    to_json(DeliveryView {
        id: &d.id,
        event: &d.event,
        identifier: &d.identifier,
        entity_type: &d.entity_type,
        occurred_at: d.occurred_at,
        status: d.status,
        attempts: d.attempts,
        last_status_code: d.last_status_code,
        last_error: d.last_error.as_deref(),
        next_attempt_at: d.next_attempt_at,
        replay_of: d.replay_of.as_deref(),
        created_at: d.created_at,
        updated_at: d.updated_at,
        attempt_log: &d.attempt_log,
        changes: d.changes,
        matched: d.matched.map(|m| m.as_str()),
    })
}

/// GET /webhooks/{id}/deliveries: the delivery log, newest first. The subscription and the
/// log's warm index (a delta Query) in parallel, then the page's entries (BatchGetItem).
pub(super) async fn deliveries(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let params = call.query.typed::<DeliveryParams>()?;
    let paging = Paging::from(params.paging);
    let status = params.status.map(|s| s.0);
    let event = params.event.as_ref().map(|e| e.0.as_str());
    reads_catalog(
        call,
        "reading the delivery log of a subscription to catalog topics",
    )?;
    let org = call.org();
    let webhook = call.route.identifier(0, "webhook id")?;
    if status.is_some() || event.is_some() {
        // the subscription is read for its 404; the log is its partition already
        let (_, log) = in_parallel(async {
            futures_util::try_join!(load(app, call), async {
                Ok(app
                    .store
                    .filtered_deliveries(org, webhook, status, event)
                    .await?)
            })
        })
        .await?;
        let page = &log[paging.range(log.len())];
        return Ok(paging.page_response(page.iter().map(render_delivery).collect(), log.len()));
    }
    let list = Followed::Deliveries { org, webhook };
    let refresh = async { Ok(app.lists.flat().refresh(&list).await?) };
    let (sub, ()) =
        in_parallel(async { futures_util::try_join!(load(app, call), refresh) }).await?;
    let mut page = app.lists.flat().page(
        &list,
        &PageQuery {
            floor: None,
            from: Seek::Offset(paging.range(usize::MAX).start),
            limit: paging.limit as usize,
            descending: true,
            filter: None,
        },
    );
    let log = app.store.get_deliveries(org, &sub.id, &page.keys).await?;
    if log.len() < page.keys.len() {
        // entries removed since (a replay that could not be queued): gone from the index too
        let gone: Vec<&String> = page
            .keys
            .iter()
            .filter(|id| !log.iter().any(|d| &d.id == *id))
            .collect();
        page.total -= gone.len();
        app.lists.flat().forget(&list, &gone);
    }
    Ok(paging.page_response(log.iter().map(render_delivery).collect(), page.total))
}

/// The `status` filter of the delivery log.
/// The query of the delivery log.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(super) struct DeliveryParams {
    #[serde(flatten)]
    paging: PageParams,
    status: Option<StatusParam>,
    event: Option<EventParam>,
}

/// `status`: only deliveries in this status.
#[derive(Debug)]
struct StatusParam(DeliveryStatus);

/// `event`: only deliveries of this event.
#[derive(Debug)]
struct EventParam(String);

impl QueryValue for StatusParam {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        status_filter(raw).map(Self)
    }

    fn schema() -> schemars::Schema {
        let all: Vec<&str> = DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect();
        schemars::json_schema!({"type": "string", "enum": all, "description": "Only deliveries in this status."})
    }
}

impl QueryValue for EventParam {
    fn parse(raw: &str) -> Result<Self, ApiError> {
        event_filter(raw).map(|e| Self(e.to_string()))
    }

    fn schema() -> schemars::Schema {
        let actions = Action::NAMES.join("|");
        let mut schema = crate::http::schema::matching(&format!("[a-z]+\\.({actions})"));
        schema.insert(
            "description".into(),
            "Only deliveries of this event (`product.updated`, `webhook.test`).".into(),
        );
        schema
    }
}

query_values!(StatusParam, EventParam);

fn status_filter(value: &str) -> Result<DeliveryStatus, ApiError> {
    DeliveryStatus::parse(value).ok_or_else(|| {
        let all: Vec<&str> = DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect();
        ApiError::bad_request(format!(
            "query parameter 'status': '{value}' is not a delivery status; statuses are {}",
            all.join(", ")
        ))
    })
}

/// The `event` filter of the delivery log: a catalog event or `webhook.test`.
fn event_filter(value: &str) -> Result<&str, ApiError> {
    let known = match Action::of_event(value) {
        Some(Action::Test | Action::Verification) => true,
        Some(_) => value
            .split_once('.')
            .is_some_and(|(entity, _)| EntityType::parse(entity).is_some()),
        None => false,
    };
    known.then_some(value).ok_or_else(|| {
        let events: Vec<String> = Action::ALL
            .iter()
            .map(|a| {
                let entity = if a.is_topic() {
                    "<entity>"
                } else {
                    topics::TEST_ENTITY_TYPE
                };
                format!("{entity}.{}", a.as_str())
            })
            .collect();
        let (last, rest) = events.split_last().expect("actions");
        ApiError::bad_request(format!(
            "query parameter 'event': '{value}' is not an event; events are {} or {last}",
            rest.join(", ")
        ))
    })
}

/// POST /webhooks/{id}/deliveries/{deliveryId}/replay: the same payload under a new
/// delivery id, queued at once. 202: it is delivered asynchronously.
pub(super) async fn replay(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    reads_catalog(
        call,
        "replaying a delivery of a subscription to catalog topics",
    )?;
    let sub = load(app, call).await?;
    let original_id = call.route.identifier(1, "delivery id")?;
    let original = app
        .store
        .get_delivery(call.org(), &sub.id, original_id)
        .await?
        .ok_or_else(|| ApiError::entity_not_found("delivery", original_id))?;
    ready(&sub, "replaying")?;
    let action = Action::of_event(&original.event).ok_or_else(ApiError::internal)?;
    if action == Action::Verification {
        return Err(ApiError::conflict(format!(
            "delivery '{}' is a verification message: POST /webhooks/{}/verification sends a new one",
            original.id, sub.id
        )));
    }
    count_by_hand(app, call).await?;
    let message = QueueMessage {
        org: call.org().to_string(),
        webhook_id: sub.id.clone(),
        delivery_id: new_delivery_id(),
        entity_type: original.entity_type.clone(),
        action,
        identifier: original.identifier.clone(),
    };
    let retention = app.config.webhooks.log_retention;
    let mut replay = new_delivery(&message, original.occurred_at, retention);
    replay.replay_of = Some(original.id.clone());
    // the same body: a replay of a change payload carries its changes
    (replay.delta, replay.changes_omitted) = (original.delta.clone(), original.changes_omitted);
    replay.matched = original.matched;
    queue_by_hand(app, call, &replay, &message).await?;
    Ok(ApiResponse::single(202, render_delivery(&replay)))
}

/// POST /webhooks/{id}/test: one `webhook.test` delivery to the subscription, signed,
/// logged and retried like every other, whatever its topics.
pub(super) async fn send_test(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let sub = load(app, call).await?;
    ready(&sub, "sending a test event")?;
    count_by_hand(app, call).await?;
    let delivery_id = send_about(app, call, &sub, Action::Test).await?;
    Ok(answer_sent(&delivery_id))
}

/// 202 with the id of a delivery sent by hand (a test event, a verification message).
pub(super) fn answer_sent(delivery_id: &str) -> ApiResponse {
    ApiResponse::single(202, to_json(TestEventView { delivery_id }))
}

/// Logs and queues a delivery about the subscription itself (entity type `webhook`, its id
/// as identifier): a test event or a verification message. Its delivery id.
pub(super) async fn send_about(
    app: &App,
    call: &Call,
    sub: &Subscription,
    action: Action,
) -> Result<String, ApiError> {
    let message = QueueMessage {
        org: call.org().to_string(),
        webhook_id: sub.id.clone(),
        delivery_id: new_delivery_id(),
        entity_type: topics::TEST_ENTITY_TYPE.to_string(),
        action,
        identifier: sub.id.clone(),
    };
    let retention = app.config.webhooks.log_retention;
    let delivery = new_delivery(&message, Timestamp::now(), retention);
    queue_by_hand(app, call, &delivery, &message).await?;
    Ok(delivery.id)
}

/// 409 unless `sub` delivers: its destination is verified and it is enabled.
fn ready(sub: &Subscription, doing: &str) -> Result<(), ApiError> {
    if sub.verification.is_some() {
        return Err(ApiError::conflict(format!(
            "webhook '{}' awaits verification of its destination; POST /webhooks/{}/verify with the token of its verification message before {doing}",
            sub.id, sub.id
        )));
    }
    if !sub.enabled {
        return Err(ApiError::conflict(format!(
            "webhook '{}' is disabled; enable it before {doing}",
            sub.id
        )));
    }
    Ok(())
}

/// Counts a delivery sent by hand (a replay or a test event) in the organization's hourly
/// quota: 429 with `Retry-After` until the next hour beyond it.
pub(super) async fn count_by_hand(app: &App, call: &Call) -> Result<(), ApiError> {
    let now = Timestamp::now().millis() / 1000;
    let hour = now / 3600;
    if app
        .store
        .count_in_hour(call.org(), "REPLAYS", hour, MAX_REPLAYS_PER_HOUR)
        .await?
    {
        return Ok(());
    }
    let wait = ((hour + 1) * 3600 - now).max(1);
    Err(ApiError::new(
        429,
        format!("quota exceeded: an organization may replay or test at most {MAX_REPLAYS_PER_HOUR} deliveries per hour; retry after {wait} s"),
    )
    .with_header("retry-after", wait.to_string()))
}

/// Logs a delivery sent by hand, then queues it; one that cannot be queued takes its log
/// entry back (a log entry without a message would stay pending forever) and is 503.
pub(super) async fn queue_by_hand(
    app: &App,
    call: &Call,
    delivery: &Delivery,
    message: &QueueMessage,
) -> Result<(), ApiError> {
    let queue = app.queue.as_ref().ok_or_else(ApiError::unavailable)?;
    app.store
        .create_delivery(call.org(), delivery, call.guard())
        .await?;
    if let Err(e) = queue.send(message, Duration::ZERO).await {
        tracing::warn!(error = %e, delivery = %delivery.id, "delivery sent by hand not queued");
        let _ = app
            .store
            .delete_delivery(call.org(), &delivery.webhook_id, &delivery.id)
            .await;
        let log = Followed::Deliveries {
            org: call.org(),
            webhook: &delivery.webhook_id,
        };
        app.lists.flat().forget(&log, &[&delivery.id]);
        return Err(ApiError::unavailable());
    }
    Ok(())
}
