//! DynamoDB's own limits, counted the way DynamoDB counts them (bytes of names and values,
//! actions per transaction), so that a write is checked whole before its first request and
//! storage never refuses half of it.

use super::ops::Item;
use aws_sdk_dynamodb::types::AttributeValue;

/// The largest item DynamoDB stores: 400 KB, attribute names included.
pub const ITEM_BYTES: usize = 400 * 1024;
/// The largest partition key value.
pub const PARTITION_KEY_BYTES: usize = 2048;
/// The largest sort key value.
pub const SORT_KEY_BYTES: usize = 1024;
/// TransactWriteItems takes at most 100 actions...
pub const TRANSACTION_ACTIONS: usize = 100;
/// ... and at most 4 MB of items in all.
pub const TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// The size DynamoDB counts for an item, rounded up where its own rule rounds (numbers are
/// counted as at most one byte per digit plus one, lists and maps with their 3-byte
/// overhead and one byte per element): never below what DynamoDB counts, so an item that
/// passes here is never refused for its size.
pub fn item_bytes(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_bytes(v)).sum()
}

fn value_bytes(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => n.len() + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::Ss(l) => l.iter().map(String::len).sum(),
        AttributeValue::Ns(l) => l.iter().map(|n| n.len() + 1).sum(),
        AttributeValue::Bs(l) => l.iter().map(|b| b.as_ref().len()).sum(),
        AttributeValue::L(l) => 3 + l.iter().map(|e| 1 + value_bytes(e)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_bytes(e))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// What is wrong with a key, if anything: the attribute and the limit it passes.
pub fn key_problem(item: &Item) -> Option<&'static str> {
    let len = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).map(String::len);
    if len(super::keys::PK).unwrap_or(0) > PARTITION_KEY_BYTES
        || len(super::keys::GSI1PK).unwrap_or(0) > PARTITION_KEY_BYTES
    {
        return Some("its partition key would exceed DynamoDB's 2,048 bytes");
    }
    if len(super::keys::SK).unwrap_or(0) > SORT_KEY_BYTES
        || len(super::keys::GSI2SK).unwrap_or(0) > SORT_KEY_BYTES
    {
        return Some("its sort key would exceed DynamoDB's 1,024 bytes");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> AttributeValue {
        AttributeValue::S(v.into())
    }

    #[test]
    fn sizes_count_names_and_values_in_bytes() {
        let item = Item::from([("PK".into(), s("abc")), ("name".into(), s("€"))]);
        assert_eq!(item_bytes(&item), 2 + 3 + 4 + 3);
        let nested = Item::from([(
            "v".into(),
            AttributeValue::M(
                [("k".to_string(), AttributeValue::L(vec![s("ab"), s("c")]))]
                    .into_iter()
                    .collect(),
            ),
        )]);
        // v + map(3 + 1 + k + list(3 + (1 + 2) + (1 + 1)))
        assert_eq!(item_bytes(&nested), 1 + 3 + 1 + 1 + 3 + 3 + 2);
        let n = Item::from([("ver".into(), AttributeValue::N("12345".into()))]);
        assert_eq!(item_bytes(&n), 3 + 6);
    }

    #[test]
    fn keys_over_the_limits_are_named() {
        let ok = Item::from([("PK".into(), s(&"p".repeat(2048))), ("SK".into(), s("L1"))]);
        assert_eq!(key_problem(&ok), None);
        let long_sk = Item::from([("PK".into(), s("p")), ("SK".into(), s(&"s".repeat(1025)))]);
        assert_eq!(
            key_problem(&long_sk),
            Some("its sort key would exceed DynamoDB's 1,024 bytes")
        );
        let long_index = Item::from([
            ("PK".into(), s("p")),
            ("GSI2SK".into(), s(&"s".repeat(1025))),
        ]);
        assert!(key_problem(&long_index).is_some());
        let long_pk = Item::from([("PK".into(), s(&"p".repeat(2049)))]);
        assert_eq!(
            key_problem(&long_pk),
            Some("its partition key would exceed DynamoDB's 2,048 bytes")
        );
    }
}
