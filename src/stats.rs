//! Statistics of values (count, min, max, mean, standard deviation): a
//! chunk's computed from its float32 values in one vectorized pass, and merged
//! pairwise into a channel's, the same bits on every build and CPU
//! (`docs/format.md`, "Statistics"). The index stores a chunk's, the manifest
//! a channel's ([`ChannelStats`]).

use serde::{Deserialize, Serialize};

/// Statistics of values as stored: a channel's in the manifest (merged from
/// its chunks' with [`Partial::as_stored`]), a chunk's in the index (`min`
/// and `max` there float32). The default is the empty one.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ChannelStats {
    /// Values.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Population standard deviation.
    pub std: f64,
}

/// Running statistics of values: count, min, max, mean and the sum of squared
/// deviations, merged with Chan et al.'s pairwise update so per-channel figures
/// come from chunk partials without a second pass over values. The default is
/// the empty partial.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Partial {
    /// Values.
    pub n: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
}

/// The smaller of `a` and `b` in IEEE 754 total order (`-0.0 < 0.0`), so the
/// result never depends on argument order or machine.
fn total_min<T: TotalOrd>(a: T, b: T) -> T {
    if b.total_less(a) {
        b
    } else {
        a
    }
}

/// The larger of `a` and `b` in IEEE 754 total order (`-0.0 < 0.0`).
fn total_max<T: TotalOrd>(a: T, b: T) -> T {
    if a.total_less(b) {
        b
    } else {
        a
    }
}

/// `total_cmp` of f32 and f64 behind one name.
trait TotalOrd: Copy {
    fn total_less(self, other: Self) -> bool;
}

impl TotalOrd for f32 {
    fn total_less(self, other: Self) -> bool {
        self.total_cmp(&other).is_lt()
    }
}

impl TotalOrd for f64 {
    fn total_less(self, other: Self) -> bool {
        self.total_cmp(&other).is_lt()
    }
}

/// Independent accumulators of [`Partial::of`]: lane `i` takes values
/// `i, i + 8, i + 16, ...`, so a pass is eight independent chains a CPU runs
/// as one vector. Every build and CPU does the same operations in the same
/// order on each lane (no fused multiply-add), so the statistics are the same
/// bits everywhere (docs/format.md, "Statistics").
const LANES: usize = 8;

/// Per lane: the smallest and largest value (`<` and `>` comparisons, NaN and
/// a zero's sign left as they come) and the sum in f64.
struct Lanes {
    min: [f32; LANES],
    max: [f32; LANES],
    sum: [f64; LANES],
}

impl Lanes {
    /// The lanes of `body` (a multiple of [`LANES`] values); on x86-64 with AVX2
    /// one 8-wide step a group, else what the compiler makes of the lane loop.
    fn of(body: &[f32]) -> Lanes {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, checked just above
            return unsafe { Lanes::of_avx2(body) };
        }
        Lanes::of_portable(body)
    }

    fn of_portable(body: &[f32]) -> Lanes {
        let mut lanes = Lanes { min: [f32::INFINITY; LANES], max: [f32::NEG_INFINITY; LANES], sum: [0f64; LANES] };
        for c in body.chunks_exact(LANES) {
            for i in 0..LANES {
                lanes.min[i] = if c[i] < lanes.min[i] { c[i] } else { lanes.min[i] };
                lanes.max[i] = if c[i] > lanes.max[i] { c[i] } else { lanes.max[i] };
                lanes.sum[i] += f64::from(c[i]);
            }
        }
        lanes
    }

    /// [`Lanes::of_portable`] in AVX2: `vminps(v, min)` is `v < min ? v : min`
    /// and `vmaxps(v, max)` is `v > max ? v : max`, the portable selects exactly
    /// (NaN and equal zeros keep the accumulator); lanes 0-3 and 4-7 are summed
    /// as two vectors of f64.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn of_avx2(body: &[f32]) -> Lanes {
        use std::arch::x86_64::*;
        let (mut min, mut max) = (_mm256_set1_ps(f32::INFINITY), _mm256_set1_ps(f32::NEG_INFINITY));
        let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for c in body.chunks_exact(LANES) {
            // SAFETY: `c` holds LANES (8) f32, the 32 bytes an unaligned load reads
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            min = _mm256_min_ps(v, min);
            max = _mm256_max_ps(v, max);
            low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
            high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
        }
        let mut lanes = Lanes { min: [0f32; LANES], max: [0f32; LANES], sum: [0f64; LANES] };
        // SAFETY: each store writes 32 bytes into an array of 32 bytes
        unsafe {
            _mm256_storeu_ps(lanes.min.as_mut_ptr(), min);
            _mm256_storeu_ps(lanes.max.as_mut_ptr(), max);
            _mm256_storeu_pd(lanes.sum.as_mut_ptr(), low);
            _mm256_storeu_pd(lanes.sum[4..].as_mut_ptr(), high);
        }
        lanes
    }

    /// Per lane, the sum of `(v - mean)²` in f64 over `body` (a multiple of
    /// [`LANES`] values).
    fn squared_deviations(body: &[f32], mean: f64) -> [f64; LANES] {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, checked just above
            return unsafe { Lanes::squared_deviations_avx2(body, mean) };
        }
        Lanes::squared_deviations_portable(body, mean)
    }

    fn squared_deviations_portable(body: &[f32], mean: f64) -> [f64; LANES] {
        let mut dev = [0f64; LANES];
        for c in body.chunks_exact(LANES) {
            for i in 0..LANES {
                let d = f64::from(c[i]) - mean;
                dev[i] += d * d;
            }
        }
        dev
    }

    /// [`Lanes::squared_deviations_portable`] in AVX2: subtract, multiply,
    /// then add, rounded one at a time as there.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn squared_deviations_avx2(body: &[f32], mean: f64) -> [f64; LANES] {
        use std::arch::x86_64::*;
        let m = _mm256_set1_pd(mean);
        let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for c in body.chunks_exact(LANES) {
            // SAFETY: `c` holds LANES (8) f32, the 32 bytes an unaligned load reads
            let v = unsafe { _mm256_loadu_ps(c.as_ptr()) };
            let d_low = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), m);
            let d_high = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)), m);
            low = _mm256_add_pd(low, _mm256_mul_pd(d_low, d_low));
            high = _mm256_add_pd(high, _mm256_mul_pd(d_high, d_high));
        }
        let mut dev = [0f64; LANES];
        // SAFETY: each store writes 32 bytes into 4 f64 of the array
        unsafe {
            _mm256_storeu_pd(dev.as_mut_ptr(), low);
            _mm256_storeu_pd(dev[4..].as_mut_ptr(), high);
        }
        dev
    }
}

impl Partial {
    /// Statistics of one chunk: min, max and sum in one pass, then the squared
    /// deviations in a second pass over the chunk while it is in cache (more
    /// accurate than sum-of-squares), each over eight independent lanes. A
    /// non-finite value makes `mean` non-finite.
    pub fn of(values: &[f32]) -> Partial {
        let body = values.len() - values.len() % LANES;
        let (body, tail) = values.split_at(body);
        let Lanes { mut min, mut max, sum: mut sums } = Lanes::of(body);
        for (i, &v) in tail.iter().enumerate() {
            min[i] = if v < min[i] { v } else { min[i] };
            max[i] = if v > max[i] { v } else { max[i] };
            sums[i] += f64::from(v);
        }
        let n = values.len() as u64;
        let mean = sums.iter().sum::<f64>() / n as f64;
        let mut dev = Lanes::squared_deviations(body, mean);
        for (i, &v) in tail.iter().enumerate() {
            let d = f64::from(v) - mean;
            dev[i] += d * d;
        }
        let fold = |a: [f32; LANES], f: fn(f32, f32) -> f32| a.into_iter().fold(a[0], f);
        let (mut min, mut max) = (fold(min, total_min), fold(max, total_max));
        // `<` cannot tell -0.0 from 0.0, so a zero extreme kept whichever zero
        // came first; in total order -0.0 is the smaller (docs/format.md,
        // "Statistics"), so the sign is settled by whether that zero occurs.
        if min == 0.0 {
            min = if values.iter().any(|v| v.to_bits() == (-0.0f32).to_bits()) { -0.0 } else { 0.0 };
        }
        if max == 0.0 {
            max = if values.iter().any(|v| v.to_bits() == 0.0f32.to_bits()) { 0.0 } else { -0.0 };
        }
        Partial { n, min: f64::from(min), max: f64::from(max), mean, m2: dev.iter().sum() }
    }

    /// Population standard deviation.
    pub fn std(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (self.m2 / self.n as f64).sqrt()
        }
    }

    /// Merges `other` into `self`.
    pub fn merge(&mut self, other: &Partial) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *other;
            return;
        }
        let n = self.n + other.n;
        let delta = other.mean - self.mean;
        self.mean += delta * other.n as f64 / n as f64;
        self.m2 += other.m2 + delta * delta * (self.n as f64) * (other.n as f64) / n as f64;
        self.min = total_min(self.min, other.min);
        self.max = total_max(self.max, other.max);
        self.n = n;
    }

    /// Statistics as the index stores them, as a partial to merge: `m2` is
    /// `std * std * count` from the stored float64 `std`. Every figure merged
    /// from chunk statistics (the manifest's channel statistics, `verify`'s
    /// recomputation of them) merges chunks in this form, so it is a function
    /// of the index as stored and an edit takes an unchanged chunk's figures
    /// from its base's index without reading its values (`docs/format.md`,
    /// "Statistics").
    pub fn as_stored(stats: &ChannelStats) -> Partial {
        let n = stats.count;
        Partial { n, min: stats.min, max: stats.max, mean: stats.mean, m2: stats.std * stats.std * n as f64 }
    }

    /// The stored form (the manifest's, and a chunk's index row's).
    pub fn to_stats(&self) -> ChannelStats {
        ChannelStats { count: self.n, min: self.min, max: self.max, mean: self.mean, std: self.std() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zero extreme is -0.0 for min and 0.0 for max when both zeros occur,
    /// wherever they stand (every lane of the vectorized fold), and merging
    /// partials in either order agrees.
    #[test]
    fn zero_extremes_follow_total_order_whatever_the_position() {
        for n in [2usize, 9, 17] {
            for neg in 0..n {
                let mut v = vec![0.0f32; n];
                v[neg] = -0.0;
                let p = Partial::of(&v);
                assert_eq!((p.min.to_bits(), p.max.to_bits()), ((-0.0f64).to_bits(), 0.0f64.to_bits()), "{v:?}");
            }
        }
        let only_neg = Partial::of(&[-0.0, -0.0]);
        assert_eq!((only_neg.min.to_bits(), only_neg.max.to_bits()), ((-0.0f64).to_bits(), (-0.0f64).to_bits()));
        let (a, b) = (Partial::of(&[0.0, 1.0]), Partial::of(&[-0.0, 1.0]));
        let (mut ab, mut ba) = (a, b);
        ab.merge(&b);
        ba.merge(&a);
        assert_eq!((ab.min.to_bits(), ab.max), ((-0.0f64).to_bits(), 1.0));
        assert_eq!((ba.min.to_bits(), ba.max), ((-0.0f64).to_bits(), 1.0));
    }

    #[test]
    fn merged_partials_equal_one_pass() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [10.0f32, -4.0];
        let mut m = Partial::of(&a);
        m.merge(&Partial::of(&b));
        let all = Partial::of(&[1.0, 2.0, 3.0, 10.0, -4.0]);
        assert_eq!(m.n, 5);
        assert_eq!((m.min, m.max), (-4.0, 10.0));
        assert!((m.mean - all.mean).abs() < 1e-12);
        assert!((m.std() - all.std()).abs() < 1e-12);
        assert_eq!(all.mean, 2.4);
    }

    /// The AVX2 lanes give the portable lanes' bits, for every length around
    /// the lane width and values that test the selects: NaN first, last and
    /// alone, both zeros, infinities, subnormals and wide magnitudes.
    #[test]
    fn avx2_lanes_are_the_portable_lanes_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        {
            if !std::arch::is_x86_feature_detected!("avx2") {
                println!("skipped: this CPU has no AVX2, so Partial::of takes the portable lanes only");
                return;
            }
            let special = [f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY, 1e-45, -3.4e38, 3.4e38];
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            for len in [0usize, 8, 16, 24, 64, 4096] {
                for case in 0..40 {
                    let body: Vec<f32> = (0..len)
                        .map(|_| match next() % 4 {
                            0 if case % 2 == 0 => special[(next() % 8) as usize],
                            _ => f32::from_bits(next() as u32 & 0xbfff_ffff) * 1e-3 + (next() % 100) as f32,
                        })
                        .collect();
                    // SAFETY: this CPU has AVX2, checked above
                    let (portable, avx2) = (Lanes::of_portable(&body), unsafe { Lanes::of_avx2(&body) });
                    let bits32 = |a: [f32; LANES]| a.map(f32::to_bits);
                    let bits64 = |a: [f64; LANES]| a.map(f64::to_bits);
                    assert_eq!(bits32(portable.min), bits32(avx2.min), "min, len {len} case {case}");
                    assert_eq!(bits32(portable.max), bits32(avx2.max), "max, len {len} case {case}");
                    assert_eq!(bits64(portable.sum), bits64(avx2.sum), "sum, len {len} case {case}");
                    let mean = f64::from(body.first().copied().unwrap_or(0.0)) / 3.0;
                    assert_eq!(
                        bits64(Lanes::squared_deviations_portable(&body, mean)),
                        // SAFETY: this CPU has AVX2, checked above
                        bits64(unsafe { Lanes::squared_deviations_avx2(&body, mean) }),
                        "deviations, len {len} case {case}"
                    );
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        println!("skipped: AVX2 lanes exist on x86-64 only");
    }
}
