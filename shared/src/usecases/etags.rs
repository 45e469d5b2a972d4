//! The entity tag of each entity kind: which stored fields are the entity's own (tagged)
//! and which are bookkeeping (keys, versions, tree times, link back-references, counted references).

use crate::error::Failure;
use crate::http::etag::tag_of;
use crate::store::items::{EntityItem, KEY_ATTRIBUTES as KEYS};
use crate::store::resources::ResourceItem;
use crate::store::webhooks::Subscription;

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

/// Checks `If-Match` (when sent) against the entity's current tag (`None`: it does not
/// exist): stale when no listed tag matches. `*` matches any existing entity; weak tags
/// never match (writes need a strong comparison).
pub fn check(if_match: Option<&str>, current: Option<&str>, what: &str) -> Result<(), Failure> {
    let Some(header) = if_match else {
        return Ok(());
    };
    let Some(current) = current else {
        return Err(Failure::Stale(format!(
            "If-Match: the {what} does not exist"
        )));
    };
    let matched = header
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || t == current);
    if matched {
        Ok(())
    } else {
        Err(Failure::Stale(format!(
            "If-Match: the {what} has changed; its ETag is now {current}"
        )))
    }
}

/// `If-Match` checked against what a write read: the entity's tag when it was found; when
/// it was not and `If-Match` was sent, stale instead.
pub fn checked<T>(
    if_match: Option<&str>,
    found: Result<T, Failure>,
    tag: impl Fn(&T) -> String,
    what: &str,
) -> Result<T, Failure> {
    match found {
        Ok(t) => {
            check(if_match, Some(&tag(&t)), what)?;
            Ok(t)
        }
        Err(e) if e.is_not_found() && if_match.is_some() => {
            check(if_match, None, what)?;
            Err(e)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod check_tests {
    use super::*;

    #[test]
    fn if_match_is_strong_and_stale_when_it_fails() {
        let t = "\"abc\"";
        assert!(check(None, None, "product").is_ok());
        assert!(check(Some("\"abc\""), Some(t), "product").is_ok());
        assert!(check(Some("\"x\", \"abc\""), Some(t), "product").is_ok());
        assert!(check(Some("*"), Some(t), "product").is_ok());
        for sent in ["W/\"abc\"", "\"abd\"", "abc"] {
            assert_eq!(
                check(Some(sent), Some(t), "product"),
                Err(Failure::Stale(
                    "If-Match: the product has changed; its ETag is now \"abc\"".into()
                ))
            );
        }
        assert_eq!(
            check(Some("*"), None, "sku"),
            Err(Failure::Stale("If-Match: the sku does not exist".into()))
        );
        assert_eq!(Failure::Stale(String::new()).status(), 412);
    }
}
