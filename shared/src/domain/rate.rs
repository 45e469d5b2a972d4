//! An organization's rate limit as a token bucket, kept as GCRA's one number (the
//! theoretical arrival time, `tat`): taking `n` tokens moves it `n` intervals later, from
//! now when the bucket is full. Pure arithmetic in microseconds; the store keeps `tat`.

/// An organization's policy: a sustained rate and a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Tokens per second.
    pub rate: u32,
    /// Tokens the bucket holds.
    pub burst: u32,
}

/// What taking tokens at a time would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Allowed: the bucket's new `tat`.
    Allowed { tat: i64 },
    /// Refused: how long until the tokens would be there (µs).
    Refused { wait_us: i64 },
}

impl Policy {
    /// Microseconds per token.
    pub fn interval_us(&self) -> i64 {
        1_000_000 / i64::from(self.rate.max(1))
    }

    /// How far `tat` may run ahead of now: the whole burst.
    pub fn tolerance_us(&self) -> i64 {
        self.interval_us() * i64::from(self.burst)
    }

    /// Seconds to refill the whole burst (`w` of `RateLimit-Policy`), at least 1.
    pub fn window_secs(&self) -> i64 {
        ceil_secs(self.tolerance_us()).max(1)
    }

    /// Taking `n` tokens at `now` from a bucket at `tat` (`None`: never used, full).
    pub fn take(&self, tat: Option<i64>, now: i64, n: u32) -> Take {
        let start = tat.map_or(now, |t| t.max(now));
        let new = start + self.interval_us() * i64::from(n);
        let over = new - now - self.tolerance_us();
        if over > 0 {
            Take::Refused { wait_us: over }
        } else {
            Take::Allowed { tat: new }
        }
    }

    /// Tokens left in a bucket at `tat`, at `now`.
    pub fn remaining(&self, tat: i64, now: i64) -> i64 {
        ((self.tolerance_us() - (tat - now).max(0)) / self.interval_us()).max(0)
    }
}

/// Tokens `lines` bulk lines cost (decisions.md: one per started group of 10): what a bulk
/// PATCH is charged (at least 1, the call's own) and what an import's batch takes.
pub fn lines_cost(lines: usize) -> u32 {
    lines.div_ceil(10) as u32
}

/// Whole seconds covering `us` microseconds (0 for none).
pub fn ceil_secs(us: i64) -> i64 {
    if us <= 0 {
        0
    } else {
        (us + 999_999) / 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Policy = Policy { rate: 2, burst: 5 };

    #[test]
    fn a_full_bucket_allows_the_burst_then_refuses_until_a_token_is_back() {
        let now = 10_000_000;
        let mut tat = None;
        for i in 0..5 {
            match P.take(tat, now, 1) {
                Take::Allowed { tat: t } => {
                    tat = Some(t);
                    assert_eq!(P.remaining(t, now), 4 - i);
                }
                refused => panic!("token {i}: {refused:?}"),
            }
        }
        assert_eq!(P.take(tat, now, 1), Take::Refused { wait_us: 500_000 });
        // half a second later one token is back
        assert!(matches!(
            P.take(tat, now + 500_000, 1),
            Take::Allowed { .. }
        ));
        // an idle bucket is full again, never fuller
        let later = now + 60_000_000;
        assert_eq!(P.remaining(tat.unwrap(), later), 5);
        assert_eq!(P.take(tat, later, 6), Take::Refused { wait_us: 500_000 });
    }

    #[test]
    fn the_policy_window_is_the_time_to_refill_the_burst() {
        assert_eq!(P.window_secs(), 3);
        assert_eq!(
            Policy {
                rate: 100,
                burst: 200
            }
            .window_secs(),
            2
        );
        assert_eq!(ceil_secs(1), 1);
        assert_eq!(ceil_secs(0), 0);
    }
}
