//! The bound of a history (`MAX_HISTORY_ENTRIES`): the write whose entries take a history
//! past it deletes the oldest beyond it, in the same BatchWriteItem requests as the
//! entries. The feed knows the numbers of the entries to delete, not their keys; their
//! keys come from one ascending Query of the history's oldest entries, exactly as many as
//! the write takes past the bound (the batch's entries of that history, at most), so the
//! cost per change stays bounded: one item read (its key and number) and one delete.

use crate::store::keys::{item_key, SK};
use crate::store::ops::Item;
use crate::store::{Store, StoreError};

/// The oldest entries of history `pk` a write takes past the bound: of its `count` oldest,
/// those numbered up to `through` (an entry from before entries were numbered is older
/// than every numbered one, and goes too).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Trim {
    pub(super) pk: String,
    pub(super) through: u64,
    pub(super) count: usize,
}

impl Trim {
    /// Whether the entry numbered `n` (`None`: unnumbered) is past the bound.
    fn takes(&self, n: Option<u64>) -> bool {
        n.is_none_or(|n| n <= self.through)
    }
}

impl Store {
    /// The keys of the entries `trims` take past the bound: one Query per history, in
    /// parallel (more only when its oldest entries pass 1 MB).
    pub(super) async fn oldest_past_bound(&self, trims: &[Trim]) -> Result<Vec<Item>, StoreError> {
        let reads = trims.iter().map(|t| self.oldest_keys(t));
        let keys = crate::store::parallel::try_all(reads).await?;
        Ok(keys.into_iter().flatten().collect())
    }

    /// The keys of the oldest `trim.count` entries of its history that it takes: their
    /// keys and numbers alone, oldest first, strongly consistent (the previous batch's
    /// entries are among them).
    async fn oldest_keys(&self, trim: &Trim) -> Result<Vec<Item>, StoreError> {
        let mut keys = Vec::new();
        let mut read = 0;
        let mut start = None;
        loop {
            let page = self
                .history_entries(&trim.pk)
                .projection_expression("SK, #n")
                .expression_attribute_names("#n", "n")
                .consistent_read(true)
                .limit((trim.count - read) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError::from_sdk("Query", e))?;
            for item in page.items.unwrap_or_default() {
                read += 1;
                let n = item
                    .get("n")
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse::<u64>().ok());
                let sk = item.get(SK).and_then(|v| v.as_s().ok());
                if let Some(sk) = sk.filter(|_| trim.takes(n)) {
                    keys.push(item_key(trim.pk.clone(), sk.as_str()));
                }
            }
            start = page.last_evaluated_key.filter(|k| !k.is_empty());
            if read >= trim.count || start.is_none() {
                return Ok(keys);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trim_takes_the_entries_up_to_its_number_and_unnumbered_ones() {
        let trim = Trim {
            pk: "O#o#H#product#p".into(),
            through: 5,
            count: 3,
        };
        assert!(trim.takes(Some(4)) && trim.takes(Some(5)) && trim.takes(None));
        // one that expired or was erased leaves a newer one oldest: it stays
        assert!(!trim.takes(Some(6)));
    }
}
