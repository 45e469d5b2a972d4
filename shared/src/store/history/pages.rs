//! Reading an entity's history: a page, newest first, cut by count and by bytes (so no
//! answer nears Lambda's 6 MB), and on the first page the total, from the head's number
//! (the head comes with the page's Query) and the oldest entry's (a one-item Query beside
//! it), whatever the history's length. Only a history whose oldest entry predates
//! numbering is counted with a COUNT Query (one request per 1 MB), until those entries
//! expire. Later pages carry the first page's total in their cursor.

use super::{EntryItem, HeadItem};
use crate::store::keys::{history_pk, item_key, HISTORY_HEAD_SK};
use crate::store::{Store, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

use super::Entry;

/// The bytes of `changes` one page holds at the most (each entry's own are at most
/// `MAX_CHANGES_BYTES`): with the rest of each entry, the answer stays well under
/// Lambda's 6 MB. A page holds at least one entry.
pub const MAX_PAGE_CHANGES_BYTES: usize = 4 << 20;

/// What an entry's answer holds besides its `changes`, at the most (id, time, event, actor
/// and the JSON around them).
const ENTRY_OVERHEAD_BYTES: usize = 512;

/// One page of an entity's history, newest first.
#[derive(Debug)]
pub struct HistoryPage {
    pub entries: Vec<Entry>,
    /// The position of the page's last entry when more follow.
    pub next_after: Option<String>,
}

/// The entries of a page out of `items` (newest first, one more than `limit` read when
/// there are more): at most `limit`, and no more than [`MAX_PAGE_CHANGES_BYTES`] of
/// answer, at least one; and whether more follow.
fn cut(mut items: Vec<EntryItem>, limit: usize, more_read: bool) -> (Vec<EntryItem>, bool) {
    let mut bytes = 0;
    let mut keep = 0;
    for item in items.iter().take(limit) {
        bytes += item.ch.as_deref().map_or(0, str::len) + ENTRY_OVERHEAD_BYTES;
        if keep > 0 && bytes > MAX_PAGE_CHANGES_BYTES {
            break;
        }
        keep += 1;
    }
    let more = more_read || items.len() > keep;
    items.truncate(keep);
    (items, more)
}

impl Store {
    /// The first page of the history of `entity_type` `identifier` ([`Store::history_page`]
    /// with no position) and its total: the head comes with the page's Query (it sorts after
    /// every entry), and the oldest entry's one-item Query runs beside it, so the total
    /// costs one request whatever the history's length (its head's number less the oldest
    /// entry's, plus one; a COUNT Query when the oldest entry has no number, written before
    /// entries were numbered).
    pub async fn history_first_page(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
        limit: usize,
    ) -> Result<(HistoryPage, u64), StoreError> {
        let pk = history_pk(org, entity_type, identifier);
        let page = self.read_history(&pk, None, limit);
        let oldest = self.oldest_entry(&pk);
        let ((page, head), oldest) = futures_util::try_join!(page, oldest)?;
        let total = self.total_of(&pk, head, oldest).await?;
        Ok((page, total))
    }

    /// A page of at most `limit` entries of the history of `entity_type` `identifier`,
    /// newest first, after the position `after` (a previous page's `next_after`), within
    /// [`MAX_PAGE_CHANGES_BYTES`]: one Query (more only when the entries pass 1 MB, and
    /// none past what the page holds).
    pub async fn history_page(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
        after: &str,
        limit: usize,
    ) -> Result<HistoryPage, StoreError> {
        let pk = history_pk(org, entity_type, identifier);
        Ok(self.read_history(&pk, Some(after), limit).await?.0)
    }

    /// The total of the history of `entity_type` `identifier` alone, as
    /// [`Store::history_first_page`] counts it: the head's GetItem and the oldest entry's
    /// Query, in parallel.
    pub async fn history_total(
        &self,
        org: &str,
        entity_type: &str,
        identifier: &str,
    ) -> Result<u64, StoreError> {
        let pk = history_pk(org, entity_type, identifier);
        let head = self.get_item::<HeadItem>(item_key(pk.clone(), HISTORY_HEAD_SK), "history head");
        let (head, oldest) = futures_util::try_join!(head, self.oldest_entry(&pk))?;
        self.total_of(&pk, head, oldest).await
    }

    /// The total from the head and the oldest entry (see [`Store::history_first_page`]).
    async fn total_of(
        &self,
        pk: &str,
        head: Option<HeadItem>,
        oldest: Option<EntryItem>,
    ) -> Result<u64, StoreError> {
        match (head, oldest) {
            (_, None) => Ok(0),
            (Some(head), Some(EntryItem { n: Some(first), .. })) if head.n >= first => {
                Ok(head.n - first + 1)
            }
            _ => self.history_count_all(pk).await,
        }
    }

    /// The oldest entry of history partition `pk`: a one-item Query.
    async fn oldest_entry(&self, pk: &str) -> Result<Option<EntryItem>, StoreError> {
        let out = self
            .history_entries(pk)
            .limit(1)
            .send()
            .await
            .map_err(|e| StoreError::from_sdk("Query", e))?;
        let items: Vec<EntryItem> = serde_dynamo::from_items(out.items.unwrap_or_default())
            .map_err(|e| StoreError::serde("history entry", e))?;
        Ok(items.into_iter().next())
    }

    /// The entries of history partition `pk`, counted: a COUNT Query (one request per 1 MB
    /// of entries).
    async fn history_count_all(&self, pk: &str) -> Result<u64, StoreError> {
        self.count_all(self.history_entries(pk)).await
    }

    /// A page of history partition `pk`, newest first, after `after` (`None`: from the
    /// top, the head included, which is returned apart).
    async fn read_history(
        &self,
        pk: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(HistoryPage, Option<HeadItem>), StoreError> {
        let mut start = after.map(|sk| item_key(pk.to_string(), sk));
        let mut head: Option<HeadItem> = None;
        let mut items: Vec<EntryItem> = Vec::new();
        // one more than the page, to know whether another follows (and the head)
        let want = limit + 1;
        let mut bytes = 0;
        let mut more_read = false;
        loop {
            let read = want + usize::from(after.is_none() && head.is_none()) - items.len();
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk AND SK <= :head")
                .expression_attribute_values(":pk", AttributeValue::S(pk.to_string()))
                .expression_attribute_values(":head", AttributeValue::S(HISTORY_HEAD_SK.into()))
                .scan_index_forward(false)
                .limit(read as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            for raw in page.items.unwrap_or_default() {
                let is_head = raw
                    .get(crate::store::keys::SK)
                    .and_then(|v| v.as_s().ok())
                    .is_some_and(|sk| sk == HISTORY_HEAD_SK);
                if is_head {
                    head = Some(
                        serde_dynamo::from_item(raw)
                            .map_err(|e| StoreError::serde("history head", e))?,
                    );
                    continue;
                }
                let item: EntryItem = serde_dynamo::from_item(raw)
                    .map_err(|e| StoreError::serde("history entry", e))?;
                bytes += item.ch.as_deref().map_or(0, str::len) + ENTRY_OVERHEAD_BYTES;
                items.push(item);
            }
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if items.len() >= want || start.is_none() {
                break;
            }
            if bytes > MAX_PAGE_CHANGES_BYTES {
                // the page is full by bytes: what is left of the history follows
                more_read = true;
                break;
            }
        }
        let (items, more) = cut(items, limit, more_read);
        let next_after = more.then(|| items.last().map(|i| i.sk.clone())).flatten();
        let entries = items.into_iter().filter_map(EntryItem::entry).collect();
        let page = HistoryPage {
            entries,
            next_after,
        };
        Ok((page, head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(sk: &str, changes: usize) -> EntryItem {
        EntryItem {
            pk: "O#o#H#product#p".into(),
            sk: sk.into(),
            et: "product".into(),
            eid: "p".into(),
            at: crate::domain::time::Timestamp::from_millis(0),
            ev: "updated".into(),
            by: None,
            ch: Some("x".repeat(changes)),
            n: None,
            ttl: 0,
        }
    }

    fn sks(items: &[EntryItem]) -> Vec<&str> {
        items.iter().map(|i| i.sk.as_str()).collect()
    }

    #[test]
    fn a_page_is_cut_by_bytes_and_holds_at_least_one_entry() {
        // 21 entries of 340 KB: by count a page of 20 would answer about 7 MB
        let items: Vec<EntryItem> = (0..21)
            .map(|i| item(&format!("t{i:02}"), 340_000))
            .collect();
        let (page, more) = cut(items, 20, false);
        assert_eq!(page.len(), 12);
        assert!(more);
        let bytes: usize = page.iter().map(|i| i.ch.as_ref().unwrap().len()).sum();
        assert!(bytes <= MAX_PAGE_CHANGES_BYTES, "{bytes}");
        // one entry however large
        let (page, more) = cut(vec![item("a", 5 << 20), item("b", 1)], 2, false);
        assert_eq!((sks(&page), more), (vec!["a"], true));
        // small entries: by count alone
        let items: Vec<EntryItem> = (0..3).map(|i| item(&format!("t{i}"), 10)).collect();
        let (page, more) = cut(items, 2, false);
        assert_eq!((sks(&page), more), (vec!["t0", "t1"], true));
        let items: Vec<EntryItem> = (0..2).map(|i| item(&format!("t{i}"), 10)).collect();
        assert!(!cut(items, 2, false).1);
    }
}
