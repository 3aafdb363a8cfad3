//! Each consumer's contiguous span of an epoch's global order, and the
//! positions handed out before an elastic resume (docs/format.md §10):
//! consumers only cut the one global sequence, never change it.

use crate::error::{Error, Result};

/// One consumer's part of an epoch: the `consumer`-th of `consumers`
/// contiguous spans of equal size (within one window) of the windows not in
/// `consumed`, in the global order, less the first `taken` of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Share {
    /// This consumer (`rank * workers + worker`), `< consumers`.
    pub consumer: usize,
    /// Consumers of the epoch (`world_size * workers`), >= 1.
    pub consumers: usize,
    /// Positions of the global sequence already handed out before this split
    /// (sorted, disjoint, half-open), from [`merge_consumed`].
    pub consumed: Vec<(u64, u64)>,
    /// Windows of this span already handed out.
    pub taken: u64,
}

impl Share {
    /// The whole epoch for one consumer.
    pub fn all() -> Share {
        Share { consumer: 0, consumers: 1, consumed: Vec::new(), taken: 0 }
    }
}

/// The positions of `0..total` not in `consumed` (sorted, disjoint).
fn remaining(total: u64, consumed: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(a, b) in consumed {
        if a > at {
            out.push((at, a.min(total)));
        }
        at = at.max(b);
    }
    if at < total {
        out.push((at, total));
    }
    out.retain(|(a, b)| a < b);
    out
}

/// Positions `lo..hi` of the sequence `intervals` (counted over their lengths), as global intervals.
fn slice(intervals: &[(u64, u64)], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut seen = 0;
    for &(a, b) in intervals {
        let (from, to) = (seen, seen + (b - a));
        let (l, h) = (lo.max(from), hi.min(to));
        if l < h {
            out.push((a + (l - from), a + (h - from)));
        }
        seen = to;
    }
    out
}

/// The global positions of `share`'s span, less its first `taken`.
pub(super) fn span(total: u64, share: &Share) -> Result<Vec<(u64, u64)>> {
    if share.consumers == 0 {
        // the count itself, not the consumer in it (review 148)
        return Err(Error::InvalidOption { option: "consumers", reason: "must be at least 1".into() });
    }
    if share.consumer >= share.consumers {
        return Err(Error::InvalidOption {
            option: "consumer",
            reason: format!("consumer {} of {} consumers", share.consumer, share.consumers),
        });
    }
    check_consumed(total, &share.consumed)?;
    let rest = remaining(total, &share.consumed);
    let n: u64 = rest.iter().map(|(a, b)| b - a).sum();
    let cut = |c: usize| (u128::from(n) * c as u128 / share.consumers as u128) as u64;
    let (lo, hi) = (cut(share.consumer), cut(share.consumer + 1));
    Ok(slice(&rest, lo.saturating_add(share.taken).min(hi), hi))
}

/// Refuses `consumed` unless its ranges are non-empty, sorted, disjoint and within `0..total`.
fn check_consumed(total: u64, consumed: &[(u64, u64)]) -> Result<()> {
    let mut at = 0;
    for &(a, b) in consumed {
        if a < at || b <= a || b > total {
            return Err(Error::InvalidOption {
                option: "consumed",
                reason: format!("range {a}..{b} is not sorted, disjoint, non-empty and within 0..{total}"),
            });
        }
        at = b;
    }
    Ok(())
}

/// The positions handed out once each consumer `c` of `consumers` (splitting
/// the windows not in `consumed`, as [`Share`] does) took its first
/// `taken[c]`: the `consumed` of a split of the rest among any number of
/// consumers (an elastic resume).
///
/// # Errors
/// [`Error::InvalidOption`] `taken` unless it has `consumers` counts.
pub fn merge_consumed(total: u64, consumed: &[(u64, u64)], consumers: usize, taken: &[u64]) -> Result<Vec<(u64, u64)>> {
    if taken.len() != consumers || consumers == 0 {
        return Err(Error::InvalidOption {
            option: "taken",
            reason: format!("{} counts for {consumers} consumers", taken.len()),
        });
    }
    check_consumed(total, consumed)?;
    let mut all: Vec<(u64, u64)> = consumed.to_vec();
    for (c, &t) in taken.iter().enumerate() {
        let share = Share { consumer: c, consumers, consumed: consumed.to_vec(), taken: 0 };
        let whole = span(total, &share)?;
        let lengths: u64 = whole.iter().map(|(a, b)| b - a).sum();
        all.extend(slice(&whole, 0, t.min(lengths)));
    }
    Ok(merged(all))
}

/// `consumed` and the last `n % ranks` of the `n` windows not in it: what a
/// split of the rest among `ranks` ranks (each of any number of consumers,
/// [`Share`]) leaves out so that every rank takes `n / ranks` windows, a
/// loader's `drop_last` (lock-step data-parallel training steps every rank
/// alike: a rank with one step more waits forever for the others). The
/// windows left out are the epoch order's last, so every rank computes the
/// same; a resume's `consumed` that holds them already leaves out no more.
///
/// # Errors
/// [`Error::InvalidOption`] (`world_size`) for 0 ranks; (`consumed`) as [`Share`].
pub fn drop_remainder(total: u64, consumed: &[(u64, u64)], ranks: usize) -> Result<Vec<(u64, u64)>> {
    if ranks == 0 {
        return Err(Error::InvalidOption { option: "world_size", reason: "must be at least 1".into() });
    }
    check_consumed(total, consumed)?;
    let rest = remaining(total, consumed);
    let n: u64 = rest.iter().map(|(a, b)| b - a).sum();
    let mut all = consumed.to_vec();
    all.extend(slice(&rest, n - n % ranks as u64, n));
    Ok(merged(all))
}

/// `ranges` (half-open, any order) sorted and merged where they touch or overlap, empty ones left out.
fn merged(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ if a < b => out.push((a, b)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank of a split after `drop_remainder` takes the same number of
    /// windows, whatever its workers, the left-out ones are the last not
    /// consumed, and a resume that holds them leaves out no more.
    #[test]
    fn dropping_the_remainder_gives_every_rank_the_same_count() {
        assert_eq!(drop_remainder(20, &[], 3).unwrap(), [(18, 20)]);
        // 15 left: the last 3 of them go, 14..17, next to what was consumed
        assert_eq!(drop_remainder(20, &[(3, 5), (17, 20)], 4).unwrap(), [(3, 5), (14, 20)]);
        // 16 left: none
        assert_eq!(drop_remainder(20, &[(3, 5), (18, 20)], 4).unwrap(), [(3, 5), (18, 20)]);
        // 13 left (0..3, 5..15): the last 1 of them, 14
        assert_eq!(drop_remainder(20, &[(3, 5), (15, 20)], 4).unwrap(), [(3, 5), (14, 20)]);
        // 16 left of 3 ranks: the last, 19
        assert_eq!(drop_remainder(20, &[(3, 5), (12, 14)], 3).unwrap(), [(3, 5), (12, 14), (19, 20)]);
        assert_eq!(drop_remainder(20, &[(0, 20)], 3).unwrap(), [(0, 20)]);
        assert_eq!(drop_remainder(20, &[], 1).unwrap(), []);
        assert_eq!(drop_remainder(2, &[], 3).unwrap(), [(0, 2)]);
        for (total, consumed, ranks) in
            [(20u64, vec![(3u64, 5u64), (10, 12)], 3usize), (1000, vec![(7, 300)], 7), (5, vec![], 2)]
        {
            let even = drop_remainder(total, &consumed, ranks).unwrap();
            assert_eq!(drop_remainder(total, &even, ranks).unwrap(), even, "it leaves out no more");
            let n: u64 = remaining(total, &even).iter().map(|(a, b)| b - a).sum();
            assert_eq!(n % ranks as u64, 0);
            for workers in [1, 2, 3] {
                let counts: Vec<u64> = (0..ranks)
                    .map(|r| {
                        (0..workers)
                            .map(|w| {
                                let share = Share {
                                    consumer: r * workers + w,
                                    consumers: ranks * workers,
                                    consumed: even.clone(),
                                    taken: 0,
                                };
                                span(total, &share).unwrap().iter().map(|(a, b)| b - a).sum::<u64>()
                            })
                            .sum()
                    })
                    .collect();
                assert_eq!(counts, vec![n / ranks as u64; ranks], "{total} {consumed:?} {ranks} {workers}");
            }
        }
        assert!(drop_remainder(20, &[], 0).is_err());
        assert!(drop_remainder(20, &[(5, 3)], 2).is_err());
    }

    #[test]
    fn spans_cover_the_rest_once_and_merge() {
        let consumed = vec![(3, 5), (10, 12)];
        let mut all: Vec<u64> = Vec::new();
        for c in 0..3 {
            let s = Share { consumer: c, consumers: 3, consumed: consumed.clone(), taken: 0 };
            for (a, b) in span(20, &s).unwrap() {
                all.extend(a..b);
            }
        }
        assert_eq!(all, [0, 1, 2, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19]);
        // spans of the 16 left: [0 1 2 5 6] [7 8 9 12 13] [14..20]; consumer 0
        // took 2 of its span, 1 took all 5, 2 took none
        let merged = merge_consumed(20, &consumed, 3, &[2, 5, 0]).unwrap();
        assert_eq!(merged, vec![(0, 2), (3, 5), (7, 14)]);
        assert_eq!(remaining(20, &merged), vec![(2, 3), (5, 7), (14, 20)]);
    }
}
