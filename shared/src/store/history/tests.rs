//! Unit tests of history's items: their keys, numbers, times to live and the bound.

use super::*;

const DAY: i64 = DAY_SECS;
const NINETY_DAYS: i64 = 90 * DAY;

fn e(id: &str, ms: i64, event: Event) -> Entry {
    Entry {
        entity_type: "product".into(),
        identifier: id.into(),
        state: Timestamp::from_millis(ms),
        at: Timestamp::from_millis(ms),
        event,
        by: None,
        changes: None,
    }
}

fn by_pk(heads: Vec<HeadItem>) -> HashMap<String, HeadItem> {
    heads.into_iter().map(|h| (h.pk.clone(), h)).collect()
}

#[test]
fn an_entry_keys_by_its_change_alone_and_reads_back() {
    let e = Entry {
        entity_type: "sku".into(),
        identifier: "s#1".into(),
        state: Timestamp::parse("2026-11-27T10:00:00.123Z").unwrap(),
        at: Timestamp::parse("2026-11-27T10:00:00.123Z").unwrap(),
        event: Event::Updated,
        by: Some(Actor::Import("imp_1".into())),
        changes: Some(r#"{"name":{"old":"a","new":"b"}}"#.into()),
    };
    let item = EntryItem::of("org1", &e, NINETY_DAYS);
    assert_eq!(item.pk, "O#org1#H#sku#s#1");
    assert_eq!(item.sk, "2026-11-27T10:00:00.123Z#3");
    assert_eq!(item.ttl, e.at.millis() / 1000 + 90 * 24 * 3600);
    let av: Item = serde_dynamo::to_item(&item).unwrap();
    // the same change makes the same item: a batch delivered again rewrites it as it was
    assert_eq!(
        av,
        serde_dynamo::to_item(EntryItem::of("org1", &e.clone(), NINETY_DAYS)).unwrap()
    );
    let back: EntryItem = serde_dynamo::from_item(av).unwrap();
    assert_eq!(back.entry(), Some(e.clone()));
    assert_eq!(e.id(), format!("h{}3", e.at.millis()));
    // a deletion is keyed by the state it ended: newest first, it comes before the
    // update or creation that made that state
    let rank = |event| history_sk("t", Event::rank(event));
    assert!(rank(Event::Deleted) > rank(Event::Updated));
    assert!(rank(Event::Updated) > rank(Event::Created));
}

#[test]
fn entries_are_numbered_after_their_head_and_a_batch_again_writes_nothing() {
    let batch = vec![
        e("a", 2_000, Event::Updated),
        e("b", 1_000, Event::Created),
        e("a", 1_000, Event::Created),
        e("a", 2_000, Event::Deleted),
    ];
    let out = numbered("o", &batch, &HashMap::new(), NINETY_DAYS, 1_000);
    let numbers: Vec<(&str, &str, Option<u64>)> = out
        .items
        .iter()
        .map(|i| (i.eid.as_str(), i.ev.as_str(), i.n))
        .collect();
    assert_eq!(
        numbers,
        vec![
            ("a", "created", Some(1)),
            ("a", "updated", Some(2)),
            ("a", "deleted", Some(3)),
            ("b", "created", Some(1)),
        ]
    );
    assert!(out.trims.is_empty());
    let heads = by_pk(out.heads);
    let a = &heads["O#o#H#product#a"];
    assert_eq!((a.n, a.sk.as_str()), (3, HISTORY_HEAD_SK));
    assert_eq!(a.pos, EntryItem::of("o", &batch[3], NINETY_DAYS).sk);
    // the same batch again: every entry is at or before its head
    assert_eq!(
        numbered("o", &batch, &heads, NINETY_DAYS, 1_000),
        Numbered::default()
    );
    // the next change goes on from the head
    let next = numbered(
        "o",
        &[e("a", 3_000, Event::Created)],
        &heads,
        NINETY_DAYS,
        1_000,
    );
    assert_eq!(next.items[0].n, Some(4));
    assert_eq!(next.heads[0].n, 4);
}

/// An entry lives its organization's retention from its change, and no shorter than the
/// entries before it in its history: a shorter retention never expires a newer entry
/// before an older one (the numbers stay contiguous, the total exact).
#[test]
fn an_entry_lives_its_retention_and_no_shorter_than_those_before_it() {
    let first = numbered(
        "o",
        &[e("a", 1_000_000, Event::Created)],
        &HashMap::new(),
        NINETY_DAYS,
        1_000,
    );
    assert_eq!(first.items[0].ttl, 1_000 + NINETY_DAYS);
    assert_eq!(first.heads[0].ttl, 1_000 + NINETY_DAYS);
    let heads = by_pk(first.heads);
    // retention shortened to a day: a new history's entries live a day, an older one's as
    // long as its entries before
    let later = [
        e("a", 2_000_000, Event::Updated),
        e("b", 2_000_000, Event::Created),
    ];
    let out = numbered("o", &later, &heads, DAY, 1_000);
    let ttls: Vec<(&str, i64)> = out.items.iter().map(|i| (i.eid.as_str(), i.ttl)).collect();
    assert_eq!(ttls, vec![("a", 1_000 + NINETY_DAYS), ("b", 2_000 + DAY)]);
    // retention lengthened: from then on
    let out = numbered(
        "o",
        &[e("a", 3_000_000, Event::Updated)],
        &heads,
        2 * NINETY_DAYS,
        1_000,
    );
    assert_eq!(out.items[0].ttl, 3_000 + 2 * NINETY_DAYS);
    assert_eq!(out.heads[0].ttl, 3_000 + 2 * NINETY_DAYS);
}

/// A history keeps its newest `bound` entries: a write that passes the bound takes the
/// oldest past it, the batch's own first, then as many written ones as the bound leaves
/// over (their keys are read then), and no more once it is past.
#[test]
fn past_the_bound_the_oldest_entries_go() {
    let changes = |from: i64, count: i64| -> Vec<Entry> {
        (from..from + count)
            .map(|i| e("a", i * 1_000, Event::Created))
            .collect()
    };
    let trims = |out: &Numbered| -> Vec<(u64, usize)> {
        out.trims.iter().map(|t| (t.through, t.count)).collect()
    };
    let numbers = |out: &Numbered| -> Vec<u64> { out.items.iter().filter_map(|i| i.n).collect() };
    // 8 entries of a bound of 10: nothing goes
    let out = numbered("o", &changes(0, 8), &HashMap::new(), DAY, 10);
    assert_eq!((numbers(&out), trims(&out)), ((1..=8).collect(), vec![]));
    let heads = by_pk(out.heads);
    // 4 more pass it by 2: the 2 oldest written ones go
    let out = numbered("o", &changes(8, 4), &heads, DAY, 10);
    assert_eq!(
        (numbers(&out), trims(&out)),
        ((9..=12).collect(), vec![(2, 2)])
    );
    assert_eq!(out.trims[0].pk, "O#o#H#product#a");
    let heads = by_pk(out.heads);
    // past it: as many go as come
    let out = numbered("o", &changes(12, 3), &heads, DAY, 10);
    assert_eq!(
        (numbers(&out), trims(&out)),
        ((13..=15).collect(), vec![(5, 3)])
    );
    let heads = by_pk(out.heads);
    // a batch larger than the bound: its own oldest are never written, and every written
    // one goes
    let out = numbered("o", &changes(15, 12), &heads, DAY, 10);
    assert_eq!(
        (numbers(&out), trims(&out)),
        ((18..=27).collect(), vec![(17, 10)])
    );
    assert_eq!(
        (out.heads[0].n, out.heads[0].pos.as_str()),
        (27, out.items[9].sk.as_str())
    );
}
