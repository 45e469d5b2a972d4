//! Quotas: how many of each kind of setting an organization may create, checked before the
//! write; beyond one, 409 naming the quota (the limits table lists them).

use crate::app::App;
use crate::error::ApiError;
pub use crate::store::quotas::Counted;

pub use crate::domain::limits::{
    MAX_ATTRIBUTES, MAX_FAMILIES, MAX_METAOBJECT_DEFINITIONS, MAX_PROFILES, MAX_REPLAYS_PER_HOUR,
    MAX_WEBHOOKS_PER_URL,
};

/// 409 unless the organization holds fewer than `max` of `counted` (`what` names them).
pub async fn below(
    app: &App,
    org: &str,
    counted: Counted,
    max: usize,
    what: &str,
) -> Result<(), ApiError> {
    if app.store.count_of(org, counted).await? >= max {
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
