//! Writes of the organization's settings item (languages, channels, scopes of values).

use super::retry::Retry;
use super::write_plan::{WritePlan, Writer};
use crate::error::Failure;
use crate::store::settings::Scopes;
use crate::store::writes::ScopesPut;

/// Applies `change` to the organization's scopes with a conditional write, read and
/// planned again when a concurrent writer changed them first; what `change` made.
pub async fn update_scopes<T>(
    w: &Writer<'_>,
    change: impl Fn(&mut Scopes) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let (cx, org) = (w.cx, w.org);
    w.run(
        "the workspace settings",
        || cx.store.get_scopes(org),
        |mut scopes| {
            let made = change(&mut scopes)?;
            scopes.ver += 1;
            Ok(WritePlan {
                write: ScopesPut { org, scopes },
                outcome: made,
            })
        },
        Retry::from,
    )
    .await
}
