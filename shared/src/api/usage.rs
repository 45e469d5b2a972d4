//! `GET /usage` (scope `settings:manage`): what the organization used today and this
//! month (UTC days): calls, refused calls, DynamoDB capacity and webhook delivery attempts,
//! as every function counts them (`usage/`). Served by the `settings` function
//! (`settings.rs`); one Query of at most 31 items.

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::error::ApiError;
use crate::http::{ApiResponse, Body, Doc, Query, Route};
use crate::usage::{today, Tally};
use serde_json::{json, Value};

pub const ENDPOINTS: &[Endpoint] = &[Endpoint::new(
    Route::new(
        "GET",
        "/usage",
        Scope::SettingsManage,
        Doc::new(
            "The organization's usage today and this month (UTC): calls, refused calls, DynamoDB capacity and webhook delivery attempts. Each function adds its counts at least every `updatedEverySeconds`",
            &[],
            None,
            200,
            Body::Single("Usage"),
        ),
    ),
    handler!(get),
)];

async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    Query::parse(&call.request.query, &[])?;
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
    let mut today_body = of_today.render();
    today_body.insert("date".into(), json!(today));
    let mut month_body = total.render();
    month_body.insert("month".into(), json!(month));
    Ok(ApiResponse::json(
        200,
        json!({"result": {
            "today": Value::Object(today_body),
            "month": Value::Object(month_body),
            "updatedEverySeconds": app.config.usage_flush.as_secs(),
        }}),
    ))
}
