//! The catalog's entity types, declared once: webhook topics and event types, the
//! deletions log, history and the change feed's rules all read this list, and the store's
//! item kinds name their type through it.

use super::named::named_enum;

named_enum! {
    /// Every type an event, a topic, a deletion or a history entry names (the spec's
    /// `entity_type` values), in the order lists and messages give them.
    pub enum EntityType {
        Product => "product",
        Variant => "variant",
        Sku => "sku",
        Asset => "asset",
        Category => "category",
        Bundle => "bundle",
        Metaobject => "metaobject",
    }
}

impl EntityType {
    /// Whether the feed keeps a history of the type's changes (`GET .../history`): the
    /// catalog entities and assets, whose values are attributes.
    pub fn has_history(self) -> bool {
        matches!(
            self,
            Self::Product | Self::Variant | Self::Sku | Self::Asset
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parse_agree() {
        assert_eq!(EntityType::ALL.len(), EntityType::NAMES.len());
        for t in EntityType::ALL {
            assert_eq!(EntityType::parse(t.as_str()), Some(*t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(EntityType::parse("widget"), None);
        assert_eq!(
            EntityType::names(),
            "product, variant, sku, asset, category, bundle, metaobject"
        );
    }
}
