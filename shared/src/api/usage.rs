//! `GET /usage` (scope `settings:manage`): what the organization used today and this
//! month (UTC days): calls, refused calls, DynamoDB capacity and webhook delivery attempts,
//! as every function counts them (`usage/`). Served by the `settings` function
//! (`settings.rs`); one Query of at most 31 items.

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::usage::Counts;
use crate::error::ApiError;
use crate::http::doc::NO_QUERY;
use crate::http::render::to_json;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::usage::{today, Tally};
use schemars::JsonSchema;
use serde::Serialize;

pub const ENDPOINTS: &[Endpoint] = &[Endpoint::new(
    Route::new(
        "GET",
        "/usage",
        Scope::SettingsManage,
        Doc::new(
            "The organization's usage today and this month (UTC): calls, refused calls, DynamoDB capacity and webhook delivery attempts. Each function adds its counts at least every `updatedEverySeconds`",
            NO_QUERY,
            None,
            200,
            Body::Single("Usage"),
        ),
    ),
    handler!(get),
)];

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let today = today();
    let month = &today[..7];
    let days = app
        .store
        .usage_days(call.org(), &format!("{month}-01"), &today)
        .await?;
    let mut total = Tally::default();
    for (_, t) in &days {
        total.add(t);
    }
    let of_today = days
        .iter()
        .find(|(d, _)| *d == today)
        .map(|(_, t)| *t)
        .unwrap_or_default();
    let usage = UsageView {
        today: Today {
            counts: of_today.counts(),
            date: &today,
        },
        month: Month {
            counts: total.counts(),
            month,
        },
        updated_every_seconds: app.config.usage_flush.as_secs(),
    };
    Ok(ApiResponse::single(200, to_json(usage)))
}

/// What the organization used.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "Usage")]
struct UsageView<'a> {
    today: Today<'a>,
    month: Month<'a>,
    /// Each function adds its counts at least this often; 0: after every call
    updated_every_seconds: u64,
}

/// Today's counts (UTC).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "UsageToday")]
struct Today<'a> {
    #[serde(flatten)]
    counts: Counts,
    #[schemars(schema_with = "day")]
    date: &'a str,
}

/// This month's counts (UTC), today's included.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "UsageMonth")]
struct Month<'a> {
    #[serde(flatten)]
    counts: Counts,
    #[schemars(schema_with = "month")]
    month: &'a str,
}

fn day(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "format": "date"})
}

fn month(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"})
}

/// The answer types of this module, for the OpenAPI document.
pub(crate) const ANSWERS: &[crate::http::doc::RequestSchema] =
    &[crate::http::schema::answer::<UsageView>];
