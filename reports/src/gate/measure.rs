//! What one gate run measured: each ratio's rounds and each counter's value.

use serde::{Deserialize, Serialize};

/// One ratio as measured: the per-round ratios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatioMeasured {
    /// Stable name.
    pub check: String,
    /// What is divided by what.
    pub what: String,
    /// One ratio per round.
    pub rounds: Vec<f64>,
    /// An absolute ceiling that applies to this check.
    pub cap: Option<f64>,
}

impl RatioMeasured {
    /// The median of the rounds (NaN when there are none).
    pub fn median(&self) -> f64 {
        median(&self.rounds)
    }
}

/// One deterministic counter as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterMeasured {
    /// Stable name.
    pub check: String,
    /// What is counted.
    pub what: String,
    /// The value.
    pub value: f64,
    /// The slack this check asks for when a baseline is first recorded (None: exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack: Option<f64>,
}

/// Everything one gate run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateMeasurement {
    /// Timed checks.
    pub ratios: Vec<RatioMeasured>,
    /// Deterministic checks.
    pub counters: Vec<CounterMeasured>,
}

/// The median of `xs` (the mean of the middle two for an even count; NaN when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
