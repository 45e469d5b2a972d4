//! Unit tests of the parent module.

use super::*;

fn put(id: &str, bytes: usize) -> TransactWriteItem {
    let s = |v: &str| AttributeValue::S(v.to_string());
    let item = Item::from([
        ("PK".to_string(), s(&format!("O#o#P#{id}"))),
        ("SK".to_string(), s("L1")),
        ("kind".to_string(), s("product")),
        ("id".to_string(), s(id)),
        ("v".to_string(), s(&"x".repeat(bytes))),
    ]);
    put_action(item, Expect::Absent).unwrap()
}

#[test]
fn transactions_hold_at_most_4_mb_of_items() {
    let mut write = TreeWrite::new();
    for i in 0..10 {
        write.start_group();
        write.push(put(&format!("p{i}"), 390 * 1024));
    }
    // 9 items of 390 KB fit the 3.5 MB kept for whole items, the 10th does not
    assert_eq!(write.transaction_sizes(), vec![9, 1]);
    assert!(write.check_limits().is_ok());
}

#[test]
fn an_item_over_400_kb_or_a_key_over_its_limit_is_refused_before_any_request() {
    let mut write = TreeWrite::new();
    write.push(put("small", 10));
    write.push(put("big", 400 * 1024));
    let err = write.check_limits().unwrap_err();
    assert!(
        matches!(&err, StoreError::TooLarge(m) if m.starts_with("product 'big' would take 409")),
        "{err:?}"
    );
    let mut write = TreeWrite::new();
    write.push(put(&"k".repeat(2100), 10));
    assert!(matches!(
        write.check_limits(),
        Err(StoreError::Refused(m)) if m.ends_with("its partition key would exceed DynamoDB's 2,048 bytes")
    ));
}
