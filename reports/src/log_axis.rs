//! Logarithmic axes for the line charts (`line_chart`): one of decades, for data sizes,
//! times and rates that span orders of magnitude, and one of powers of two, for thread
//! counts. Both map a value to a share of the plot's length, so equal ratios take equal
//! lengths.

use crate::axis::nice_125;

/// A logarithmic axis: its domain and its ticks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogAxis {
    /// Smallest value of the domain (positive).
    pub lo: f64,
    /// Largest value of the domain (above `lo`).
    pub hi: f64,
    /// Tick values, ascending, all within the domain.
    pub ticks: Vec<f64>,
}

/// The positive finite values among `values`, as (smallest, largest).
fn extent(values: &[f64]) -> Option<(f64, f64)> {
    values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        })
}

impl LogAxis {
    /// A base-10 axis over `values` (non-positive and non-finite ones ignored): the
    /// domain runs from the 1, 2 or 5 times a power of ten at or below the smallest
    /// value to the one at or above the largest, at least a factor of 4 wide; ticks at
    /// every decade (every other one past 8 decades), at both ends, and at 2 and 5 times
    /// each decade when the axis spans 2.5 decades or less. `None` without a positive
    /// value.
    pub(crate) fn decades(values: &[f64]) -> Option<LogAxis> {
        let (min, max) = extent(values)?;
        let (mut lo, mut hi) = (nice_125(min, false), nice_125(max, true));
        if hi / lo < 4.0 {
            (lo, hi) = (nice_125(min / 2.0, false), nice_125(max * 2.0, true));
        }
        let span = hi.log10() - lo.log10();
        let every = if span > 8.0 { 2 } else { 1 };
        let mut ticks = vec![lo, hi];
        let first = lo.log10().floor() as i32;
        for e in first..=(hi.log10().ceil() as i32) {
            let decade = 10f64.powi(e);
            if (e - first) % every == 0 {
                ticks.push(decade);
            }
            if span <= 2.5 {
                ticks.extend([2.0 * decade, 5.0 * decade]);
            }
        }
        Some(LogAxis::with_ticks(lo, hi, ticks))
    }

    /// A base-2 axis over `values` (non-positive and non-finite ones ignored): from the
    /// power of two at or below the smallest value to the one at or above the largest
    /// (at least one doubling), a tick at every power of two. `None` without a positive
    /// value.
    pub(crate) fn powers_of_two(values: &[f64]) -> Option<LogAxis> {
        let (min, max) = extent(values)?;
        let lo = 2f64.powf(min.log2().floor());
        let mut hi = 2f64.powf(max.log2().ceil());
        if hi <= lo {
            hi = lo * 2.0;
        }
        let doublings = (hi / lo).log2().round() as i32;
        let ticks = (0..=doublings).map(|i| lo * 2f64.powi(i)).collect();
        Some(LogAxis::with_ticks(lo, hi, ticks))
    }

    /// The axis from `lo` to `hi` with `ticks` kept to the domain, sorted and without
    /// (relative) repeats.
    fn with_ticks(lo: f64, hi: f64, mut ticks: Vec<f64>) -> LogAxis {
        ticks.retain(|t| *t >= lo * 0.999_999 && *t <= hi * 1.000_001);
        ticks.sort_by(f64::total_cmp);
        ticks.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-6);
        LogAxis { lo, hi, ticks }
    }

    /// The same axis with `extra` values (those within the domain) as ticks too.
    pub(crate) fn with_extra_ticks(self, extra: &[f64]) -> LogAxis {
        let mut ticks = self.ticks;
        ticks.extend(extra.iter().copied().filter(|v| v.is_finite()));
        LogAxis::with_ticks(self.lo, self.hi, ticks)
    }

    /// Position of `v` as a share of the axis's length (0 at `lo`, 1 at `hi`), clamped
    /// to the domain; values that are not positive sit at 0.
    pub(crate) fn position(&self, v: f64) -> f64 {
        if !(v.is_finite() && v > 0.0) {
            return 0.0;
        }
        let (a, b) = (self.lo.ln(), self.hi.ln());
        ((v.ln() - a) / (b - a)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestResult;

    #[test]
    fn data_sizes_get_decade_ticks_and_their_ends() -> TestResult {
        let a = LogAxis::decades(&[1e5, 1e6, 1e7, 5e7]).ok_or("no axis")?;
        assert_eq!((a.lo, a.hi), (1e5, 5e7));
        assert_eq!(a.ticks, vec![1e5, 1e6, 1e7, 5e7]);
        assert_eq!(a.position(1e5), 0.0);
        assert_eq!(a.position(5e7), 1.0);
        // Each decade takes the same length.
        let decade = a.position(1e6) - a.position(1e5);
        assert!((a.position(1e7) - a.position(1e6) - decade).abs() < 1e-12);
        assert!((decade - 1.0 / 5e2f64.log10()).abs() < 1e-12);
        // A measured size between decades becomes a tick of its own.
        let b = LogAxis::decades(&[1e5, 3e7])
            .ok_or("no axis")?
            .with_extra_ticks(&[3e7, 0.0]);
        assert_eq!(b.ticks, vec![1e5, 1e6, 1e7, 3e7, 5e7]);
        Ok(())
    }

    #[test]
    fn narrow_spans_widen_and_gain_two_and_five_ticks() -> TestResult {
        let a = LogAxis::decades(&[900.0, 2_400.0]).ok_or("no axis")?;
        assert_eq!((a.lo, a.hi), (500.0, 5_000.0));
        assert_eq!(a.ticks, vec![500.0, 1000.0, 2000.0, 5000.0]);
        let one = LogAxis::decades(&[61_000.0]).ok_or("no axis")?;
        assert!(one.lo < 61_000.0 && one.hi > 61_000.0, "{one:?}");
        let wide = LogAxis::decades(&[1.0, 1e10]).ok_or("no axis")?;
        assert_eq!(wide.ticks, vec![1.0, 100.0, 1e4, 1e6, 1e8, 1e10]);
        Ok(())
    }

    #[test]
    fn threads_get_a_tick_at_every_power_of_two() -> TestResult {
        let a = LogAxis::powers_of_two(&[1.0, 2.0, 4.0, 8.0, 16.0]).ok_or("no axis")?;
        assert_eq!((a.lo, a.hi), (1.0, 16.0));
        assert_eq!(a.ticks, vec![1.0, 2.0, 4.0, 8.0, 16.0]);
        assert_eq!(a.position(4.0), 0.5);
        let odd = LogAxis::powers_of_two(&[3.0, 12.0]).ok_or("no axis")?;
        assert_eq!(odd.ticks, vec![2.0, 4.0, 8.0, 16.0]);
        let one = LogAxis::powers_of_two(&[8.0]).ok_or("no axis")?;
        assert_eq!((one.lo, one.hi), (8.0, 16.0));
        Ok(())
    }

    #[test]
    fn positions_rise_with_the_value_and_stay_on_the_axis() -> TestResult {
        let a = LogAxis::decades(&[3.0, 7e6]).ok_or("no axis")?;
        let values: Vec<f64> = (0..60).map(|i| 10f64.powf(f64::from(i) / 6.0)).collect();
        let positions: Vec<f64> = values.iter().map(|v| a.position(*v)).collect();
        assert!(positions.windows(2).all(|w| w[0] <= w[1]), "{positions:?}");
        assert!(positions.iter().all(|p| (0.0..=1.0).contains(p)));
        assert!(a.position(4.0) < a.position(5.0));
        assert_eq!(a.position(0.0), 0.0);
        assert_eq!(a.position(f64::NAN), 0.0);
        assert_eq!(a.position(1e12), 1.0);
        assert!(a.ticks.windows(2).all(|w| w[0] < w[1]));
        Ok(())
    }

    #[test]
    fn no_positive_value_no_axis() {
        assert_eq!(LogAxis::decades(&[]), None);
        assert_eq!(LogAxis::decades(&[0.0, -1.0, f64::NAN]), None);
        assert_eq!(LogAxis::powers_of_two(&[0.0]), None);
    }
}
