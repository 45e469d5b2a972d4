//! `/webhooks` routes (scope `settings:manage`): subscriptions, secret rotation, the
//! delivery log, replays, test events and the event catalog.

use crate::app::{handler, Api, App, Call, Endpoint};
use crate::auth::apikey::{prefixed_ulid, random_string, SECRET_ALPHABET};
use crate::auth::Scope;
use crate::domain::time::Timestamp;
use crate::error::{ApiError, Failure};
use crate::http::body::present;
use crate::http::doc::{QueryDoc, NO_QUERY, PAGE};
use crate::http::render::to_json;
use crate::http::schema::{self, request};
use crate::http::{ApiResponse, Body, Credential, Doc, Paging, Route};
use crate::search::flat::{PageQuery, Seek};
use crate::store::flat_lists::Followed;
use crate::store::metrics::in_parallel;
use crate::store::webhooks::{Attempt, Delivery, DeliveryStatus, Subscription, Verification};
use crate::usecases::etags;
use crate::usecases::quotas::{create_within, MAX_REPLAYS_PER_HOUR};
use crate::usecases::subscriptions::{self, find, same_url_below_quota, QUOTA};
use crate::webhooks::changed_fields;
use crate::webhooks::event_types;
use crate::webhooks::queue::{new_delivery, new_delivery_id, QueueMessage};
use crate::webhooks::topics::{self, Action, MAX_TOPICS};
use crate::webhooks::url_guard;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

mod deliveries;
mod destination;
mod fields;
mod secrets;
mod view;

pub use view::render;
use view::{view, WebhookView};

pub(crate) use deliveries::DELIVERY_ANSWERS;
use deliveries::*;
use destination::*;
use fields::*;
use secrets::*;

const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/webhooks",
            Scope::SettingsManage,
            Doc::new(
                "List webhook subscriptions",
                PAGE,
                None,
                200,
                Body::List("Webhook"),
            ),
        ),
        handler!(list),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/webhooks",
            Scope::SettingsManage,
            Doc::new(
                "Create a webhook subscription (the secret is shown once)",
                NO_QUERY,
                Some(request::<WebhookCreate>),
                201,
                Body::Single("Webhook"),
            ),
        ),
        handler!(create),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/webhooks/{id}",
            Scope::SettingsManage,
            Doc::new(
                "Get a webhook subscription",
                NO_QUERY,
                None,
                200,
                Body::Single("Webhook"),
            ),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PATCH",
            "/webhooks/{id}",
            Scope::SettingsManage,
            Doc::new(
                "Update a webhook subscription",
                NO_QUERY,
                Some(request::<WebhookFields>),
                200,
                Body::Single("Webhook"),
            ),
        ),
        handler!(update),
    ),
    Endpoint::new(
        Route::new(
            "DELETE",
            "/webhooks/{id}",
            Scope::SettingsManage,
            Doc::delete("Delete a webhook subscription"),
        ),
        handler!(delete),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/webhooks/{id}/rotate-secret",
            Scope::SettingsManage,
            Doc::new(
                "Rotate the signing secret (shown once); the old one may sign beside it for a while",
                NO_QUERY,
                Some(request::<Rotation>),
                200,
                Body::Single("Webhook"),
            ),
        ),
        handler!(rotate),
    ),
    Endpoint::new(
        Route::new(
            "GET",
            "/webhooks/{id}/deliveries",
            Scope::SettingsManage,
            Doc::new(
                "The delivery log, newest first; `status` and `event` narrow it",
                QueryDoc::of::<deliveries::DeliveryParams>(),
                None,
                200,
                Body::List("Delivery"),
            ),
        ),
        handler!(deliveries),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/webhooks/{id}/deliveries/{deliveryId}/replay",
            Scope::SettingsManage,
            Doc::new(
                "Replay a delivery under a new id",
                NO_QUERY,
                None,
                202,
                Body::Single("Delivery"),
            ),
        ),
        handler!(replay),
    ),
    Endpoint::new(
        Route::new(
            "POST",
            "/webhooks/{id}/test",
            Scope::SettingsManage,
            Doc::new(
                "Send a test event (`webhook.test`, entity type `webhook`, the subscription's id as identifier), signed and logged like every delivery, whatever the subscription's topics",
                NO_QUERY,
                None,
                202,
                Body::Single("TestEvent"),
            ),
        ),
        handler!(send_test),
    ),
    destination::VERIFY,
    destination::RESEND,
    Endpoint::new(
        Route::new(
            "GET",
            "/event-types",
            Scope::SettingsManage,
            Doc::new(
                "The event catalog: every topic a subscription can name, with a description and an example payload",
                PAGE,
                None,
                200,
                Body::List("EventType"),
            ),
        ),
        handler!(event_types),
    ),
];

pub const API: Api = Api {
    function: "webhooks",
    endpoints: ENDPOINTS,
    parts: crate::context::Parts::NONE,
};

/// Most subscriptions per organization (the change feed reads them all per batch), counted
/// atomically with each create (`api/quotas.rs`).
pub const MAX_WEBHOOKS: usize = 50;
const MAX_DESCRIPTION: usize = 500;
/// The fields of a subscription a POST or PATCH /webhooks body may set (POST requires
/// `topics` and `url` or `destination`, `enabled: false` creates it disabled);
/// `description: null` clears it.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WebhookPatch")]
struct WebhookFields {
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "schema::http_url")]
    url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "destination_schema")]
    destination: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "topic_list")]
    topics: Option<Vec<Value>>,
    /// Deliver an `*.updated` event only when one of these changed: `name` or attribute
    /// selectors (`product.color`, `sku.price_*`); null: every update
    #[serde(default, rename = "changedFields", deserialize_with = "present")]
    #[schemars(schema_with = "changed_fields::schema")]
    changed_fields: Option<Value>,
    /// `thin` (default): the notice alone; `changes`: with the old and new values of what
    /// changed
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "payload_kinds")]
    payload: Option<Value>,
    /// Deliver only changes of entities that match it before or after (the lists' `search`
    /// and its mode); each delivery says `match`: entered, stayed or left; null: every change
    #[serde(default, deserialize_with = "present")]
    #[schemars(schema_with = "filter_schema")]
    filter: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>")]
    description: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    enabled: Option<bool>,
}

/// Why a subscription is disabled when a request disabled it (or created it disabled).
pub const DISABLED_BY_REQUEST: &str = "disabled by a request (enabled: false)";
/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] = &[
    schema::answer::<WebhookView>,
    schema::answer::<event_types::EventType>,
];

/// The `url` field, parsed, checked against the SSRF rules and resolved.
async fn checked_url(app: &App, raw: &str) -> Result<String, ApiError> {
    let policy = app.config.webhooks.policy;
    let url = url_guard::parse(raw, policy).map_err(ApiError::bad_request)?;
    url_guard::check_resolved(&url, policy)
        .await
        .map_err(ApiError::bad_request)?;
    Ok(url.to_string())
}

/// Every topic is a catalog topic (products, variants, SKUs, assets, categories, bundles,
/// metaobjects): its events carry catalog identifiers and times, so subscribing to one,
/// changing such a subscription in any way (its URL, secret, state or description: each
/// could hand its stream to the changer), and reading or replaying its deliveries, needs
/// `catalog:read` beside `settings:manage`.
fn reads_catalog(call: &Call, what: &str) -> Result<(), ApiError> {
    if call.principal.has(Scope::CatalogRead) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "{what} needs the 'catalog:read' scope as well; this API key lacks it"
    )))
}

/// The subscription the path names.
async fn load(app: &App, call: &Call) -> Result<Subscription, ApiError> {
    let id = call.route.identifier(0, "webhook id")?;
    Ok(find(app, call.org(), id).await?)
}

/// GET /webhooks: every subscription, oldest first.
async fn list(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let query = &call.query;
    let paging = Paging::from_query(query)?;
    let subs = app.store.list_subscriptions(call.org()).await?;
    Ok(paging.envelope(&subs, render))
}

/// POST /webhooks: 201 with the signing secret, shown this once.
async fn create(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: WebhookFields = call.body(app)?;
    if body.url.is_none() && body.destination.is_none() {
        return Err(ApiError::bad_request(
            "field 'url' (or 'destination') is required",
        ));
    }
    let topics = topics_field(body.topics.as_deref())?
        .ok_or_else(|| ApiError::bad_request("field 'topics' is required"))?;
    reads_catalog(call, "subscribing to catalog topics")?;
    let changed_fields = changed_fields::parse(body.changed_fields.as_ref())
        .map_err(ApiError::bad_request)?
        .flatten();
    let description = description_field(body.description.as_ref())?.flatten();
    let filter = filter_field(app, call, body.filter.as_ref())
        .await?
        .flatten();
    if let Some(f) = &filter {
        crate::webhooks::filters::check_levels(f, &topics)?;
    }
    let enabled = body.enabled.unwrap_or(true);
    let destination = destination_field(app, body.url.as_deref(), body.destination.as_ref())
        .await?
        .ok_or_else(ApiError::internal)?;
    let aws = destination.kind().is_aws();
    let now = Timestamp::now();
    let sub = Subscription {
        id: prefixed_ulid("wh_"),
        url: destination.address().to_string(),
        kind: destination.kind(),
        verification: aws.then(new_verification),
        topics,
        changed_fields,
        payload: payload_field(body.payload.as_ref())?.unwrap_or_default(),
        filter,
        description,
        enabled,
        disabled_reason: (!enabled).then(|| DISABLED_BY_REQUEST.to_string()),
        // IAM authenticates AWS destinations: nothing is signed
        secret: if aws { String::new() } else { new_secret() },
        previous_secret: None,
        previous_secret_expires_at: None,
        created_at: now,
        updated_at: now,
        ver: 1,
    };
    // Both quotas, the organization's and the URL's, counted atomically with the create.
    let count = || async {
        let subs = app.store.list_subscriptions(call.org()).await?;
        same_url_below_quota(&subs, sub.kind, &sub.url, None)?;
        Ok(subs.len())
    };
    let new = &sub;
    let create = |claim| async move {
        app.store
            .create_subscription(call.org(), new, call.guard(), Some(&claim))
            .await
    };
    let quota = (MAX_WEBHOOKS, "webhooks");
    create_within(
        app,
        (call.org(), QUOTA),
        quota,
        count,
        create,
        Failure::from,
    )
    .await?;
    if aws {
        ask_for_token(app, call, &sub).await;
    }
    Ok(ApiResponse::shown(201, &view(&sub, true, None)).with_etag(etags::subscription(&sub)))
}

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "webhook id")?;
    let (sub, health) = app
        .store
        .get_subscription_and_health(call.org(), id)
        .await?;
    let sub = sub.ok_or_else(|| Failure::not_found("webhook", id))?;
    Ok(
        ApiResponse::single(200, to_json(view(&sub, false, Some(&health))))
            .with_etag(etags::subscription(&sub)),
    )
}

/// Applies `change` to the subscription the path names (`usecases::subscriptions::modify`).
async fn modify(
    app: &App,
    call: &Call,
    url: Option<&str>,
    change: impl Fn(&mut Subscription) -> Result<(), Failure>,
) -> Result<Subscription, ApiError> {
    let id = call.route.identifier(0, "webhook id")?;
    Ok(subscriptions::modify(&call.writer(app), id, url, change).await?)
}

/// PATCH /webhooks/{id}: omitted fields stay as they are; `description: null` clears it.
async fn update(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: WebhookFields = call.body(app)?;
    let topics = topics_field(body.topics.as_deref())?;
    reads_catalog(call, "changing a subscription to catalog topics")?;
    let changed_fields =
        changed_fields::parse(body.changed_fields.as_ref()).map_err(ApiError::bad_request)?;
    let description = description_field(body.description.as_ref())?;
    let payload = payload_field(body.payload.as_ref())?;
    let filter = filter_field(app, call, body.filter.as_ref()).await?;
    let enabled = body.enabled;
    let by_url = body.url.is_some();
    let destination =
        destination_field(app, body.url.as_deref(), body.destination.as_ref()).await?;
    let address = destination.as_ref().map(|d| d.address());
    let repointed = std::sync::atomic::AtomicBool::new(false);
    let sub = modify(app, call, address, |sub| {
        if let Some(d) = &destination {
            keeps_kind(sub.kind, d, by_url)?;
            let other = sub.url != d.address() && d.kind().is_aws();
            repointed.store(other, std::sync::atomic::Ordering::Relaxed);
            if other {
                // another queue or bus proves it is the subscriber's again
                sub.verification = Some(new_verification());
            }
            sub.url = d.address().to_string();
        }
        if let Some(t) = &topics {
            sub.topics = t.clone();
        }
        if let Some(f) = &changed_fields {
            sub.changed_fields = f.clone();
        }
        if let Some(d) = &description {
            sub.description = d.clone();
        }
        sub.payload = payload.unwrap_or(sub.payload);
        if let Some(f) = &filter {
            sub.filter = f.clone();
        }
        // the filter and the topics as they will stand
        if let Some(f) = &sub.filter {
            crate::webhooks::filters::check_levels(f, &sub.topics)?;
        }
        match enabled {
            Some(true) => {
                sub.enabled = true;
                sub.disabled_reason = None;
            }
            Some(false) if sub.enabled => {
                sub.enabled = false;
                sub.disabled_reason = Some(DISABLED_BY_REQUEST.into());
            }
            _ => {}
        }
        Ok(())
    })
    .await?;
    let repointed = repointed.load(std::sync::atomic::Ordering::Relaxed);
    if repointed {
        ask_for_token(app, call, &sub).await;
    }
    // Another destination, or enabled again: its next delivery goes at once, not at the
    // probe time of a streak that was another's, or disabled it.
    if enabled == Some(true) || repointed {
        app.store.clear_endpoint_health(call.org(), &sub.id).await?;
    }
    Ok(ApiResponse::single(200, render(&sub)).with_etag(etags::subscription(&sub)))
}

async fn delete(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let id = call.route.identifier(0, "webhook id")?;
    // With If-Match, the subscription read is checked and deleted only at that version.
    let at_version = match call.request.if_match.as_deref() {
        None => None,
        Some(sent) => {
            let sub = etags::checked(
                Some(sent),
                find(app, call.org(), id).await,
                etags::subscription,
                "webhook",
            )?;
            Some(sub.ver)
        }
    };
    if !app
        .store
        .delete_subscription(call.org(), id, at_version)
        .await?
    {
        return Err(match at_version {
            Some(_) => ApiError::new(412, "If-Match: the webhook has changed"),
            None => Failure::not_found("webhook", id).into(),
        });
    }
    Ok(ApiResponse::single(200, crate::http::render::deleted(id)))
}

/// GET /event-types: the event catalog, one page.
async fn event_types(_app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let query = &call.query;
    let paging = Paging::from_query(query)?;
    Ok(paging.envelope(&event_types::catalog(), |t| to_json(t)))
}
