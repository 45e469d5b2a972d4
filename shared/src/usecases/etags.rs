//! The entity tag of each entity kind: which stored fields are the entity's own (tagged)
//! and which are bookkeeping (keys, versions, tree times, link back-references, counted references).

use crate::http::etag::tag_of;
use crate::store::items::EntityItem;
use crate::store::resources::ResourceItem;
use crate::store::webhooks::Subscription;

const KEYS: [&str; 4] = ["PK", "SK", "GSI1PK", "GSI2SK"];

/// A product's, variant's or SKU's tag: not moved by its descendants (`tu`, `ver`).
pub fn entity(item: &EntityItem) -> String {
    tag_of(
        item,
        &[&KEYS[..], &["tu", "ver", "ak", "src", "mr"]].concat(),
    )
}

/// An asset's, category's, bundle's or metaobject's tag: not moved by links to it.
pub fn resource(item: &ResourceItem) -> String {
    tag_of(
        item,
        &[&KEYS[..], &["tu", "ver", "cver", "ak", "linkedBy", "mr"]].concat(),
    )
}

/// A webhook subscription's tag (a rotated secret moves it).
pub fn subscription(sub: &Subscription) -> String {
    tag_of(sub, &["ver"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::Timestamp;
    use crate::domain::values::StoredValues;
    use crate::store::items::EntityKind;

    #[test]
    fn descendants_and_links_do_not_move_a_tag_but_own_changes_do() {
        let at = Timestamp::from_millis(1_700_000_000_000);
        let p = EntityItem::new(
            "o1",
            EntityKind::Product,
            "p",
            (None, None),
            "P",
            StoredValues::new(),
            at,
        );
        let mut later = p.clone();
        later.updated_at = Timestamp::from_millis(1_700_000_000_999);
        later.ver += 3;
        assert_eq!(entity(&p), entity(&later));
        later.name = "Q".into();
        assert_ne!(entity(&p), entity(&later));
    }
}

#[cfg(test)]
mod resource_tests {
    use super::*;
    use crate::domain::time::Timestamp;
    use crate::store::resources::Shelf;

    #[test]
    fn a_resource_tag_ignores_who_links_it() {
        let at = Timestamp::from_millis(1_700_000_000_000);
        let a = ResourceItem::new("o1", Shelf::ASSETS, "logo", "Logo", at);
        let mut linked = a.clone();
        linked.linked_by = vec!["p1".into(), "p2".into()];
        linked.ver += 1;
        assert_eq!(resource(&a), resource(&linked));
        let mut renamed = linked.clone();
        renamed.name = "Brand".into();
        assert_ne!(resource(&a), resource(&renamed));
    }
}

/// `If-Match` checked against what a write read: the entity's tag when it was found; when
/// it was not (a 404) and `If-Match` was sent, 412 instead.
pub fn checked<T>(
    if_match: Option<&str>,
    found: Result<T, crate::error::ApiError>,
    tag: impl Fn(&T) -> String,
    what: &str,
) -> Result<T, crate::error::ApiError> {
    match found {
        Ok(t) => {
            crate::http::etag::check(if_match, Some(&tag(&t)), what)?;
            Ok(t)
        }
        Err(e) if e.status == 404 && if_match.is_some() => {
            crate::http::etag::check(if_match, None, what)?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}
