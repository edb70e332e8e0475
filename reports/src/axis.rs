//! A chart's value axis: what its values are (`ValueAxis`), and choosing its layout:
//! linear from zero, linear with an axis break when one bar dwarfs the rest, or
//! logarithmic when the values span too many orders of magnitude for the small bars to be
//! read on a linear axis (shares always span 0 to 100 %).

/// A bar more than this many times the second largest is cut at an axis break.
pub(crate) const OUTLIER_FACTOR: f64 = 4.0;

/// When the largest bar left after any cut is more than this many times the smallest,
/// a logarithmic axis is used instead.
pub(crate) const LOG_SPREAD: f64 = 50.0;

/// Share of the plot width that the domain takes when an axis break is drawn; the cut
/// bar runs past the break to the full width.
pub(crate) const BREAK_DOMAIN_SHARE: f64 = 0.8;

/// Where the break glyph sits, as a share of the plot width.
pub(crate) const BREAK_AT_SHARE: f64 = 0.88;

/// How values map to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scale {
    /// Linear, from zero.
    Linear,
    /// Base-10 logarithmic.
    Log,
}

/// A planned axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    /// Linear or logarithmic.
    pub scale: Scale,
    /// Smallest value of the domain (0 for linear).
    pub lo: f64,
    /// Largest value of the domain; with a break, larger values are cut.
    pub hi: f64,
    /// Whether values above `hi` exist and are cut at an axis break.
    pub cut: bool,
    /// Tick values, ascending, all within [lo, hi].
    pub ticks: Vec<f64>,
}

/// What the values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// Nanoseconds.
    Time,
    /// A dimensionless ratio.
    Ratio,
    /// A share of a whole (a hit rate), from 0 to 1, drawn on a 0 to 100 % axis.
    Share,
}

/// A vertical reference line with a caption on each side.
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    /// Where the line is.
    pub value: f64,
    /// Caption left of the line.
    pub left: String,
    /// Caption right of the line.
    pub right: String,
}

/// A chart's value axis: what the values are and how the axis is laid out.
#[derive(Debug, Clone)]
pub(crate) struct ValueAxis {
    /// Axis title: what the values are. The unit (linear time axes) or ", log scale"
    /// is added, then `better` in parentheses.
    pub title: String,
    /// Values the axis must include.
    pub include: Vec<f64>,
    /// Optional reference line.
    pub reference: Option<Reference>,
    /// What the values are.
    pub kind: ValueKind,
    /// Which way is better, e.g. "lower is better".
    pub better: String,
    /// Always use a log axis.
    pub force_log: bool,
}

impl ValueAxis {
    /// Times per operation where lower is better, on the axis the values call for
    /// (linear, broken or log) with no reference line: every chart but the headline ratio.
    pub(crate) fn times(title: &str) -> ValueAxis {
        ValueAxis {
            title: title.to_string(),
            include: vec![],
            reference: None,
            kind: ValueKind::Time,
            better: "lower is better".to_string(),
            force_log: false,
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x * 0.999_999 {
            return m * p;
        }
    }
    10.0 * p
}

fn linear(max: f64, cut: bool) -> Axis {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let step = nice_step(max / 5.0);
    let steps = (max / step - 1e-9).ceil().max(1.0);
    let hi = steps * step;
    let ticks = (0..=steps as usize).map(|i| i as f64 * step).collect();
    Axis {
        scale: Scale::Linear,
        lo: 0.0,
        hi,
        cut,
        ticks,
    }
}

/// The largest 1, 2 or 5 times a power of ten at most `x` (`up`: the smallest at least).
pub(crate) fn nice_125(x: f64, up: bool) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    let steps = [1.0, 2.0, 5.0, 10.0];
    if up {
        steps
            .iter()
            .map(|m| m * p)
            .find(|v| *v >= x * 0.999_999)
            .unwrap_or(10.0 * p)
    } else {
        steps
            .iter()
            .rev()
            .map(|m| m * p)
            .find(|v| *v <= x * 1.000_001)
            .unwrap_or(p)
    }
}

fn log(min: f64, max: f64) -> Axis {
    // At least 0.3 decades below the smallest bar, so it keeps some length.
    let lo = nice_125(min / 2.0, false);
    let hi = nice_125(max, true).max(lo * 10.0);
    let decades = hi.log10() - lo.log10();
    let every = if decades > 8.0 { 2 } else { 1 };
    let mut ticks = vec![lo];
    let first = lo.log10().ceil() as i32;
    for e in first..=(hi.log10().floor() as i32) {
        let base = 10f64.powi(e);
        if (e - first) % every == 0 {
            ticks.push(base);
        }
        if decades <= 2.5 {
            ticks.extend([2.0 * base, 5.0 * base, 0.2 * base, 0.5 * base]);
        }
    }
    ticks.push(hi);
    ticks.retain(|t| *t >= lo * 0.999_999 && *t <= hi * 1.000_001);
    ticks.sort_by(f64::total_cmp);
    // Relative, since the ticks span decades.
    ticks.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-6);
    Axis {
        scale: Scale::Log,
        lo,
        hi,
        cut: false,
        ticks,
    }
}

/// Plans the axis for `values` (non-finite and negative values are ignored). `force_log`
/// asks for a log axis (ratios); `include` are values the domain must contain (a
/// reference line).
pub(crate) fn plan(values: &[f64], force_log: bool, include: &[f64]) -> Axis {
    let mut v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    let positive: Vec<f64> = v
        .iter()
        .chain(include.iter())
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    let pmin = positive.iter().copied().fold(f64::INFINITY, f64::min);
    let pmax = positive.iter().copied().fold(0.0, f64::max);
    let all_positive = v.iter().all(|x| *x > 0.0) && !positive.is_empty();
    if force_log && all_positive {
        return log(pmin, pmax);
    }
    let inc_max = include.iter().copied().fold(0.0, f64::max);
    let (cut, rest_max) = match (v.first(), v.get(1)) {
        (Some(a), Some(b)) if *b > 0.0 && *a > OUTLIER_FACTOR * b && *a > inc_max => (true, *b),
        (Some(a), _) => (false, *a),
        _ => (false, 0.0),
    };
    let rest_max = rest_max.max(inc_max);
    if all_positive && rest_max / pmin > LOG_SPREAD {
        return log(pmin, pmax);
    }
    linear(rest_max, cut)
}

/// The axis of shares (hit rates): linear from 0 to 1 whatever the values, so that
/// shares are read against the whole.
pub(crate) fn share() -> Axis {
    linear(1.0, false)
}

impl Axis {
    /// Position of `v` as a share of the plot width, and whether the bar is cut. Values
    /// past a break map to 1.0; values outside the domain are clamped.
    pub(crate) fn position(&self, v: f64) -> (f64, bool) {
        match self.scale {
            Scale::Linear => {
                let share = if self.cut { BREAK_DOMAIN_SHARE } else { 1.0 };
                if self.cut && v > self.hi {
                    (1.0, true)
                } else {
                    ((v / self.hi).clamp(0.0, 1.0) * share, false)
                }
            }
            Scale::Log => {
                if v <= 0.0 {
                    return (0.0, false);
                }
                let (a, b) = (self.lo.log10(), self.hi.log10());
                (((v.log10() - a) / (b - a)).clamp(0.0, 1.0), false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestResult;

    #[test]
    fn close_values_get_a_linear_axis_from_zero() -> TestResult {
        let a = plan(&[100.0, 230.0, 180.0], false, &[]);
        assert_eq!(a.scale, Scale::Linear);
        assert!(!a.cut);
        assert_eq!(a.lo, 0.0);
        assert!(a.hi >= 230.0 && a.hi <= 300.0, "{a:?}");
        assert_eq!(a.ticks.first(), Some(&0.0));
        assert!(a.ticks.len() >= 3 && a.ticks.len() <= 8, "{a:?}");
        assert_eq!(a.position(a.hi), (1.0, false));
        Ok(())
    }

    #[test]
    fn one_huge_bar_is_cut_at_a_break() -> TestResult {
        let a = plan(&[100.0, 230.0, 180.0, 50_000.0], false, &[]);
        assert_eq!(a.scale, Scale::Linear);
        assert!(a.cut);
        assert!(a.hi < 1000.0);
        assert_eq!(a.position(50_000.0), (1.0, true));
        let (p, cut) = a.position(230.0);
        assert!(!cut && p <= BREAK_DOMAIN_SHARE);
        Ok(())
    }

    #[test]
    fn wide_spreads_get_a_log_axis() -> TestResult {
        let a = plan(&[10.0, 100.0, 5_000.0, 9_000.0], false, &[]);
        assert_eq!(a.scale, Scale::Log);
        assert_eq!(a.lo, 5.0);
        assert_eq!(a.hi, 10_000.0);
        assert_eq!(a.ticks, vec![5.0, 10.0, 100.0, 1000.0, 10_000.0]);
        let (p, _) = a.position(100.0);
        let expected = (100f64.log10() - 5f64.log10()) / (10_000f64.log10() - 5f64.log10());
        assert!((p - expected).abs() < 1e-9);
        let b = plan(&[480.0, 28_600.0], true, &[]);
        assert_eq!((b.lo, b.hi), (200.0, 50_000.0));
        assert!(b.ticks.contains(&1000.0) && b.ticks.contains(&50_000.0));
        Ok(())
    }

    #[test]
    fn ratios_always_include_the_reference() -> TestResult {
        let a = plan(&[0.3, 0.5], true, &[1.0]);
        assert_eq!(a.scale, Scale::Log);
        assert!(a.lo <= 0.15 && a.hi >= 1.0);
        assert!(a.ticks.contains(&1.0));
        assert!(a.ticks.windows(2).all(|w| w[0] < w[1]));
        Ok(())
    }

    #[test]
    fn shares_span_zero_to_one() -> TestResult {
        let a = share();
        assert_eq!(
            (a.scale, a.lo, a.hi, a.cut),
            (Scale::Linear, 0.0, 1.0, false)
        );
        assert_eq!(a.ticks.len(), 6);
        assert_eq!(a.position(0.5), (0.5, false));
        Ok(())
    }

    #[test]
    fn degenerate_inputs_still_plan() -> TestResult {
        assert_eq!(plan(&[], false, &[]).scale, Scale::Linear);
        assert_eq!(plan(&[0.0, 0.0], false, &[]).hi, 1.0);
        assert_eq!(plan(&[f64::NAN, 5.0], false, &[]).scale, Scale::Linear);
        assert_eq!(plan(&[0.0, 5.0], true, &[]).scale, Scale::Linear);
        Ok(())
    }
}
