//! Independent writes packed into shared transactions and committed in one call: the bulk
//! path's plan for new products. Each write stays all or nothing (it never straddles two
//! transactions); a transaction that fails takes only its own writes with it, and the caller
//! learns which writes committed.

use super::*;
use futures_util::StreamExt;

/// Writes tagged by the caller (a bulk line's index), packed in order into transactions of
/// at most [`TRANSACTION_LIMIT`] actions and [`TRANSACTION_PUT_BYTES`].
#[derive(Debug, Default)]
pub struct PackedWrites {
    batches: Vec<Batch>,
}

/// One transaction's writes, their tags, and their running size (each write is measured
/// once, when added).
#[derive(Debug, Default)]
struct Batch {
    write: TreeWrite,
    tags: Vec<usize>,
    actions: usize,
    put_bytes: usize,
}

impl PackedWrites {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds write `tag`, in the last transaction when it fits there, else in a new one; a
    /// write too big for one transaction is given back (it must commit on its own).
    pub fn add(&mut self, tag: usize, write: TreeWrite) -> Result<(), TreeWrite> {
        let (actions, put_bytes) = (write.len(), write.put_bytes());
        if actions > TRANSACTION_LIMIT || put_bytes > TRANSACTION_PUT_BYTES {
            return Err(write);
        }
        let fits = self.batches.last().is_some_and(|b| {
            b.actions + actions <= TRANSACTION_LIMIT
                && b.put_bytes + put_bytes <= TRANSACTION_PUT_BYTES
        });
        if !fits {
            self.batches.push(Batch::default());
        }
        let batch = self.batches.last_mut().expect("a batch");
        batch.write.append(write);
        batch.tags.push(tag);
        batch.actions += actions;
        batch.put_bytes += put_bytes;
        Ok(())
    }

    /// How many transactions the writes take.
    pub fn transactions(&self) -> usize {
        self.batches.len()
    }
}

/// What became of one packed write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    Yes,
    /// Its transaction failed: nothing of it was written.
    Failed,
    /// The call's deadline came before its transaction was sent: nothing was written.
    NotStarted,
}

impl Store {
    /// Commits the packed writes, at most `concurrency` transactions at a time (the
    /// Idempotency-Key's `guard` joins the first to commit): each tag with what became of
    /// its write. A write whose transaction failed, for any reason, changed nothing; no
    /// transaction starts after `deadline` (one already sent is waited for).
    pub async fn commit_packed(
        &self,
        packed: PackedWrites,
        concurrency: usize,
        origin: &Origin<'_>,
        deadline: Option<std::time::Instant>,
    ) -> Vec<(usize, Committed)> {
        let committed: Vec<(Vec<usize>, Committed)> = futures_util::stream::iter(packed.batches)
            .map(|Batch { write, tags, .. }| async move {
                if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                    return (tags, Committed::NotStarted);
                }
                let done = match self.commit(&write, origin).await {
                    Ok(_) => Committed::Yes,
                    Err(_) => Committed::Failed,
                };
                (tags, done)
            })
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        committed
            .into_iter()
            .flat_map(|(tags, ok)| tags.into_iter().map(move |t| (t, ok)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_pack_in_order_into_transactions_of_at_most_100_actions() {
        let item = EntityItem::new(
            "o",
            EntityKind::Product,
            "p",
            (None, None),
            "p",
            StoredValues::new(),
            Timestamp::from_millis(1),
        );
        let write_of = |actions: usize| {
            let mut w = TreeWrite::new();
            for _ in 0..actions {
                w.bump(&item).unwrap();
            }
            w
        };
        let mut packed = PackedWrites::new();
        for tag in 0..5 {
            packed.add(tag, write_of(30)).unwrap();
        }
        packed.add(5, write_of(40)).unwrap();
        let too_big = packed.add(9, write_of(TRANSACTION_LIMIT + 1));
        assert_eq!(too_big.map_err(|w| w.len()), Err(TRANSACTION_LIMIT + 1));
        let tags: Vec<Vec<usize>> = packed.batches.iter().map(|b| b.tags.clone()).collect();
        assert_eq!(tags, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        assert_eq!(packed.transactions(), 2);
        assert!(packed
            .batches
            .iter()
            .all(|b| b.write.len() == b.actions && b.actions <= TRANSACTION_LIMIT));
    }
}
