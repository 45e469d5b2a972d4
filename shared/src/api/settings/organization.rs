//! `GET /settings` (scope `catalog:read`) and `PATCH /settings` (scope `settings:manage`):
//! the organization's own settings, kept on its item beside its API access and rate limit.
//! Today one, `historyRetentionDays`: how long the change feed keeps the history entries
//! it writes from then on (1 to 90 days, default 90; the feed reads it with each batch's
//! history heads, `store/history/mod.rs`). One GetItem to read, one UpdateItem to change.

use crate::app::{handler, App, Call, Endpoint};
use crate::auth::Scope;
use crate::domain::limits::HISTORY_RETENTION_DAYS;
use crate::error::ApiError;
use crate::http::body::{present, whole_number};
use crate::http::doc::NO_QUERY;
use crate::http::render::to_json;
use crate::http::schema::request;
use crate::http::{ApiResponse, Body, Doc, Route};
use crate::store::items::OrgItem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(super) const ENDPOINTS: &[Endpoint] = &[
    Endpoint::new(
        Route::new(
            "GET",
            "/settings",
            Scope::CatalogRead,
            Doc::new(
                "The organization's settings",
                NO_QUERY,
                None,
                200,
                Body::Single("OrganizationSettings"),
            ),
        ),
        handler!(get),
    ),
    Endpoint::new(
        Route::new(
            "PATCH",
            "/settings",
            Scope::SettingsManage,
            Doc::new(
                "Change the organization's settings (omitted ones stay); a new `historyRetentionDays` applies to the history entries written from then on",
                NO_QUERY,
                Some(request::<SettingsPatch>),
                200,
                Body::Single("OrganizationSettings"),
            ),
        ),
        handler!(patch),
    ),
];

/// The organization's settings.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "OrganizationSettings")]
pub(super) struct SettingsView {
    /// Days the change feed keeps each history entry it writes from a change of this
    /// setting on (entries written before keep theirs; an entry is never kept shorter than
    /// those before it in its entity's history, so a history expires oldest first)
    #[schemars(range(min = 1, max = 90))]
    history_retention_days: u32,
}

impl SettingsView {
    fn of(org: &OrgItem) -> Self {
        Self {
            history_retention_days: org.history_retention_days(),
        }
    }
}

/// The body of PATCH /settings: the settings to change.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "OrganizationSettingsPatch")]
struct SettingsPatch {
    /// Days the change feed keeps each history entry it writes from now on (default 90)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "u32", range(min = 1, max = 90))]
    history_retention_days: Option<Value>,
}

/// GET /settings: one GetItem of the organization's item.
async fn get(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let org = app
        .store
        .get_org(call.org())
        .await?
        .ok_or_else(|| ApiError::not_found("organization not found"))?;
    Ok(ApiResponse::single(200, to_json(SettingsView::of(&org))))
}

/// PATCH /settings {historyRetentionDays?}: checked before anything is read, then one
/// UpdateItem of the organization's item (none when the body changes nothing).
async fn patch(app: &App, call: &Call) -> Result<ApiResponse, ApiError> {
    let body: SettingsPatch = call.body(app)?;
    let days = body
        .history_retention_days
        .map(|v| {
            whole_number(&v)
                .and_then(|d| u32::try_from(d).ok())
                .filter(|d| HISTORY_RETENTION_DAYS.contains(d))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "field 'historyRetentionDays' must be an integer from {} to {}",
                        HISTORY_RETENTION_DAYS.start(),
                        HISTORY_RETENTION_DAYS.end()
                    ))
                })
        })
        .transpose()?;
    let Some(days) = days else {
        return get(app, call).await;
    };
    let org = app.store.set_history_retention(call.org(), days).await?;
    Ok(ApiResponse::single(200, to_json(SettingsView::of(&org))))
}
