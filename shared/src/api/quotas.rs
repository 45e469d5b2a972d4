//! Quotas: how many of each kind of setting an organization may create, checked before the
//! write; beyond one, 409 naming the quota (the limits table lists them).

use crate::app::App;
use crate::error::ApiError;

/// Attribute definitions per organization.
pub const MAX_ATTRIBUTES: usize = 2_000;
/// Families per organization.
pub const MAX_FAMILIES: usize = 1_000;
/// Completeness profiles per organization.
pub const MAX_PROFILES: usize = 100;
/// Metaobject definitions per organization.
pub const MAX_METAOBJECT_DEFINITIONS: usize = 100;
/// Webhook subscriptions to one URL.
pub const MAX_WEBHOOKS_PER_URL: usize = 5;
/// Delivery replays per organization and hour.
pub const MAX_REPLAYS_PER_HOUR: usize = 1_000;

/// 409 unless the organization holds fewer than `max` items in partition `pk`.
pub async fn below(app: &App, pk: String, max: usize, what: &str) -> Result<(), ApiError> {
    if app.store.count_partition(pk).await? >= max {
        return Err(over(max, what));
    }
    Ok(())
}

/// The answer beyond a quota: `an organization may have at most 100 completeness profiles`.
pub fn over(max: usize, what: &str) -> ApiError {
    ApiError::conflict(format!(
        "quota exceeded: an organization may have at most {max} {what}"
    ))
}
