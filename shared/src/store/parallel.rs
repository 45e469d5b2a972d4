//! Running a group of requests in parallel as one round trip.
//!
//! `futures_util::future::try_join_all` polls through `FuturesUnordered`, which yields to
//! the executor after 32 futures per poll: past 32, requests would start only after others
//! finished, and a page's 100 tree reads would take several round trips. `try_all` polls
//! every pending future on each wake-up, outside tokio's cooperative budget, so all
//! requests go out at once, and counts the group as one round trip.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Runs every future to completion concurrently; the first error wins. Outputs keep order.
pub async fn try_all<T, E, F>(futures: impl IntoIterator<Item = F>) -> Result<Vec<T>, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut pending: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let mut done: Vec<Option<T>> = pending.iter().map(|_| None).collect();
    let mut open: Vec<bool> = vec![true; pending.len()];
    // Tokio's cooperative budget would make some futures wait a turn before they even
    // start; the group is bounded (one page), so it runs unconstrained.
    let all = tokio::task::unconstrained(std::future::poll_fn(move |cx| {
        for (i, fut) in pending.iter_mut().enumerate() {
            if !open[i] {
                continue;
            }
            if let Poll::Ready(out) = fut.as_mut().poll(cx) {
                open[i] = false;
                done[i] = Some(out?);
            }
        }
        if open.iter().any(|o| *o) {
            Poll::Pending
        } else {
            Poll::Ready(Ok(done
                .iter_mut()
                .map(|d| d.take().expect("done"))
                .collect()))
        }
    }));
    super::metrics::in_parallel(all).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keeps_order_and_stops_at_the_first_error() {
        let ok: Result<Vec<u32>, ()> = try_all((0..100).map(|i| async move { Ok(i) })).await;
        assert_eq!(ok.unwrap(), (0..100).collect::<Vec<_>>());
        let err: Result<Vec<u32>, u32> = try_all((0..5).map(|i| async move {
            if i == 3 {
                Err(i)
            } else {
                Ok(i)
            }
        }))
        .await;
        assert_eq!(err, Err(3));
    }
}
