//! The probe's samples of a long run, kept to a fixed number. Four samples a second are
//! worth having for a short run's charts, but a run of days would pile up millions of them
//! in memory and in the result file. Once [`MAX_SAMPLES`] are kept, every two neighbours
//! become one and from then on each kept sample stands for twice as many taken. A merged
//! sample keeps what the figures need: the later time and CPU total (CPU time is
//! cumulative, so the run's CPU is still last − first), and the peaks of memory, threads
//! and file descriptors, so a spike is never thinned away. The store is allocated whole
//! when the probe starts, its pages written once, and thinned in place: what the samples
//! cost is the same from the first second of a run to the last (a store that doubled as it
//! filled grew the client's memory for the first half hour of every run, and then again
//! after each thinning).

use crate::samples::ServerSample;

/// The most samples kept: half an hour at the probe's 250 ms before any is thinned.
pub const MAX_SAMPLES: usize = 7_200;

/// Samples kept at a resolution that halves whenever they would exceed [`MAX_SAMPLES`].
#[derive(Debug, Default)]
pub struct Thinned {
    samples: Vec<ServerSample>,
    /// Samples taken per sample kept.
    stride: usize,
    /// The samples taken towards the next kept one, merged, and how many.
    pending: Option<ServerSample>,
    pending_count: usize,
}

impl Thinned {
    pub fn new() -> Thinned {
        Thinned { samples: full_size_store(), stride: 1, pending: None, pending_count: 0 }
    }

    /// One more sample taken.
    pub fn push(&mut self, sample: ServerSample) {
        let merged = match self.pending.take() {
            Some(earlier) => merge(&earlier, &sample),
            None => sample,
        };
        self.pending_count += 1;
        if self.pending_count < self.stride {
            self.pending = Some(merged);
            return;
        }
        self.pending_count = 0;
        self.samples.push(merged);
        if self.samples.len() >= MAX_SAMPLES {
            merge_neighbours(&mut self.samples);
            self.stride *= 2;
        }
    }

    /// Every kept sample, in time order (with the partly filled last one).
    pub fn into_samples(mut self) -> Vec<ServerSample> {
        self.samples.extend(self.pending.take());
        self.samples
    }
}

/// Room for [`MAX_SAMPLES`], every page of it written now (not zeros, which the allocator
/// could hand out as pages not yet there): resident from the start, never more later.
fn full_size_store() -> Vec<ServerSample> {
    let mut samples = Vec::with_capacity(MAX_SAMPLES);
    samples.resize(MAX_SAMPLES, ServerSample { t_ms: u64::MAX, ..ServerSample::default() });
    samples.clear();
    samples
}

/// Every two neighbours of `samples` become one, in place (the store keeps its room).
fn merge_neighbours(samples: &mut Vec<ServerSample>) {
    let pairs = samples.len().div_ceil(2);
    for i in 0..pairs {
        let first = samples[2 * i];
        samples[i] = samples.get(2 * i + 1).map_or(first, |second| merge(&first, second));
    }
    samples.truncate(pairs);
}

/// Two neighbouring samples as one: the later one's time and CPU total, the peaks.
fn merge(earlier: &ServerSample, later: &ServerSample) -> ServerSample {
    ServerSample {
        t_ms: later.t_ms,
        rss_bytes: earlier.rss_bytes.max(later.rss_bytes),
        cpu_seconds: later.cpu_seconds,
        threads: earlier.threads.max(later.threads),
        fds: earlier.fds.max(later.fds),
        slab_bytes: earlier.slab_bytes.max(later.slab_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: u64) -> ServerSample {
        ServerSample {
            t_ms: n * 250,
            rss_bytes: if n == 12_345 { 1 << 30 } else { 1 << 20 },
            cpu_seconds: n as f64 / 100.0,
            threads: 1,
            fds: 10 + n % 7,
            slab_bytes: 0,
        }
    }

    #[test]
    fn a_week_of_samples_stays_bounded_and_keeps_peaks_and_the_cpu_total() {
        let mut thinned = Thinned::new();
        let taken = 7 * 24 * 3600 * 4;
        for n in 0..taken {
            thinned.push(sample(n));
        }
        let kept = thinned.into_samples();
        assert!(kept.len() <= MAX_SAMPLES, "{}", kept.len());
        assert!(kept.len() >= MAX_SAMPLES / 2, "{}", kept.len());
        assert_eq!(kept.iter().map(|s| s.rss_bytes).max(), Some(1 << 30), "the spike survives");
        assert_eq!(kept.iter().map(|s| s.fds).max(), Some(16));
        let last = kept.last().unwrap();
        assert_eq!((last.t_ms, last.cpu_seconds), ((taken - 1) * 250, (taken - 1) as f64 / 100.0));
        assert!(kept.windows(2).all(|w| w[0].t_ms < w[1].t_ms), "in time order");
    }

    /// Before the store was allocated whole, it held 4 KiB after a minute, 384 KiB after
    /// half an hour, half that after the first thinning, then grew again: the client's
    /// memory rose with the run's length.
    #[test]
    fn the_store_holds_the_same_memory_at_minute_five_as_after_ten_hours() {
        let mut thinned = Thinned::new();
        let per_second = 4;
        let held = |thinned: &Thinned| thinned.samples.capacity() * size_of::<ServerSample>();
        let mut at_minute_five = None;
        for n in 0..10 * 3600 * per_second {
            thinned.push(sample(n));
            if n == 5 * 60 * per_second {
                at_minute_five = Some(held(&thinned));
            }
            if let Some(then) = at_minute_five {
                assert_eq!(held(&thinned), then, "{} s into the run", n / per_second);
            }
        }
        assert!(at_minute_five.is_some_and(|bytes| bytes <= MAX_SAMPLES * size_of::<ServerSample>()));
    }

    #[test]
    fn a_short_run_keeps_every_sample() {
        let mut thinned = Thinned::new();
        (0..100).for_each(|n| thinned.push(sample(n)));
        assert_eq!(thinned.into_samples(), (0..100).map(sample).collect::<Vec<_>>());
    }
}
