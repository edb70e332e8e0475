//! The gate's baseline and verdicts, together.

use super::*;
use crate::Provenance;

fn provenance() -> Provenance {
    crate::testing::provenance("rustc", "ai-meta gate --update-baseline")
}

fn measurement(scan: &[f64], pages: f64) -> GateMeasurement {
    GateMeasurement {
        ratios: vec![
            RatioMeasured {
                check: "manifest_scan/manifest_beyond".into(),
                what: "aimeta / lmdb".into(),
                rounds: scan.to_vec(),
                cap: None,
            },
            RatioMeasured {
                check: "kvchain_lpm/native_vs_bisect".into(),
                what: "native / bisect".into(),
                rounds: vec![0.6, 0.7, 0.65],
                cap: Some(1.0),
            },
        ],
        counters: vec![CounterMeasured {
            check: "pages_per_scan_cold/manifest_beyond".into(),
            what: "pages".into(),
            value: pages,
            slack: None,
        }],
    }
}

#[test]
fn median_of_odd_even_and_nan() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
    assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
}

/// The first baseline recorded from `m` (no earlier one to keep slacks from), at scale
/// ci with `rounds` rounds of 100 operations.
fn first_baseline(m: &GateMeasurement, rounds: u32) -> GateBaseline {
    GateBaseline::record(m, GateShape::new("ci", rounds, 100), provenance(), None)
}

#[test]
fn ratio_bounds_use_slack_and_cap() {
    let b = first_baseline(&measurement(&[1.0], 10.0), 5);
    assert_eq!(b.ratios[0].bound(), 1.0 * (1.0 + DEFAULT_SLACK));
    // The cap wins over a baseline whose slack would let "native" be slower than bisect.
    assert_eq!(b.ratios[1].bound(), 0.65 * (1.0 + DEFAULT_SLACK));
    let capped = RatioBound {
        ratio: 0.9,
        ..b.ratios[1].clone()
    };
    assert_eq!(capped.bound(), 1.0);
}

#[test]
fn updating_the_counters_keeps_the_ratios_and_the_slacks() {
    let mut m = measurement(&[1.0], 100.0);
    m.counters[0].slack = Some(0.01);
    let base = first_baseline(&m, 3);
    let mut later = provenance();
    later.commit = "later".into();
    let updated = base.with_counters(&measurement(&[9.0], 80.0), later.clone());
    assert_eq!(updated.ratios, base.ratios);
    assert_eq!(updated.provenance, base.provenance);
    assert_eq!(updated.counters[0].value, 80.0);
    assert_eq!(updated.counters[0].slack, Some(0.01));
    assert_eq!(
        updated.counters_provenance.clone().map(|p| p.commit),
        Some("later".into())
    );
    assert_eq!(base.counters_provenance, None);
    // A counter measured higher is not loosened.
    let higher = updated.with_counters(&measurement(&[1.0], 90.0), later);
    assert_eq!(higher.counters[0].value, 80.0);
}

#[test]
fn adding_new_checks_keeps_every_recorded_one_and_says_which_were_added() {
    let base = first_baseline(&measurement(&[1.0], 100.0), 3);
    let mut later = measurement(&[9.0], 500.0);
    later.ratios.push(RatioMeasured {
        check: "manifest_cas/manifest_fits".into(),
        what: "aimeta / lmdb".into(),
        rounds: vec![1.1, 1.0, 1.2],
        cap: None,
    });
    let mut p = provenance();
    p.commit = "later".into();
    let (added, names) = base.with_new_checks(&later, p);
    assert_eq!(names, vec!["manifest_cas/manifest_fits".to_string()]);
    assert_eq!(
        added.ratios[..2],
        base.ratios[..],
        "recorded ratios untouched"
    );
    assert_eq!(added.counters, base.counters, "recorded counters untouched");
    assert_eq!(added.ratios[2].ratio, 1.1);
    assert_eq!(added.ratios[2].slack, DEFAULT_SLACK);
    assert_eq!(added.additions.len(), 1);
    assert_eq!(added.additions[0].provenance.commit, "later");
    // It round-trips, and a run with nothing new adds no empty group.
    let text = serde_json::to_string(&added).expect("json");
    let back: GateBaseline = serde_json::from_str(&text).expect("parse");
    assert_eq!(back, added);
    let (same, none) = added.with_new_checks(&later, provenance());
    assert!(none.is_empty());
    assert_eq!(same, added);
    // A baseline without additions reads as before.
    assert!(!serde_json::to_string(&base)
        .expect("json")
        .contains("additions"));
}

#[test]
fn locking_in_lowers_only_the_named_ratios_and_never_raises_one() {
    let base = first_baseline(&measurement(&[1.0], 100.0), 3);
    let name = base.ratios[0].check.clone();
    let mut p = provenance();
    p.commit = "faster".into();
    let lower = measurement(&[0.6], 100.0);
    let locked = base
        .with_locked_in(&lower, std::slice::from_ref(&name), p.clone())
        .expect("lower");
    assert_eq!(locked.ratios[0].ratio, 0.6);
    assert_eq!(locked.ratios[0].slack, base.ratios[0].slack);
    assert_eq!(locked.ratios[1..], base.ratios[1..], "the others untouched");
    assert_eq!(locked.counters, base.counters);
    assert_eq!(locked.additions.len(), 1);
    assert_eq!(locked.additions[0].kind, AdditionKind::LockedIn);
    let text = serde_json::to_string(&locked).expect("json");
    assert!(text.contains("locked_in"));
    let back: GateBaseline = serde_json::from_str(&text).expect("parse");
    assert_eq!(back, locked);
    // Higher or equal is refused, as is a name the run or the baseline lacks.
    let higher = measurement(&[1.2], 100.0);
    assert!(base
        .with_locked_in(&higher, std::slice::from_ref(&name), p.clone())
        .is_err());
    assert!(base
        .with_locked_in(&lower, &["no/such".to_string()], p)
        .is_err());
}

#[test]
fn a_counter_with_slack_passes_within_it_and_keeps_it_when_recorded_again() {
    let mut m = measurement(&[1.0], 100.0);
    m.counters[0].slack = Some(0.01);
    let base = first_baseline(&m, 3);
    assert_eq!(base.counters[0].slack, Some(0.01));
    let verdict = |pages: f64| evaluate(&base, &measurement(&[1.0], pages), None)[2].verdict;
    assert_eq!(verdict(100.5), Verdict::Pass);
    assert_eq!(verdict(99.0), Verdict::Improved);
    assert_eq!(verdict(101.5), Verdict::Fail);
    // A re-recording keeps the file's slack, not what the measurement proposes.
    let again = GateBaseline::record(
        &measurement(&[1.0], 100.0),
        GateShape::new("ci", 3, 100),
        provenance(),
        Some(&base),
    );
    assert_eq!(again.counters[0].slack, Some(0.01));
    // Exact counters stay exact.
    let exact = first_baseline(&measurement(&[1.0], 100.0), 3);
    assert_eq!(exact.counters[0].slack, None);
    let rows = evaluate(&exact, &measurement(&[1.0], 100.5), None);
    assert_eq!(rows[2].verdict, Verdict::Fail);
}

#[test]
fn verdicts_pass_fail_and_remeasure() {
    let base = first_baseline(&measurement(&[1.0, 1.1, 0.9], 10.0), 3);
    let ok = evaluate(&base, &measurement(&[1.2, 1.25, 1.1], 10.0), None);
    assert!(passes(&ok), "{}", render_table(&ok));

    let slow = measurement(&[2.0, 1.9, 2.1], 10.0);
    let rows = evaluate(&base, &slow, None);
    assert!(!passes(&rows));
    assert_eq!(failing_ratios(&rows), vec!["manifest_scan/manifest_beyond"]);
    // A re-measurement within the bound clears it (noise); one over it confirms.
    let noise = evaluate(&base, &slow, Some(&measurement(&[1.0], 10.0)));
    assert!(passes(&noise));
    assert_eq!(noise[0].remeasured, Some(1.0));
    let confirmed = evaluate(&base, &slow, Some(&measurement(&[2.2], 10.0)));
    assert!(!passes(&confirmed));
    assert!(render_table(&confirmed).contains("FAIL"));
}

#[test]
fn counters_are_exact() {
    let base = first_baseline(&measurement(&[1.0], 10.0), 1);
    let more = evaluate(&base, &measurement(&[1.0], 10.01), None);
    assert_eq!(more[2].verdict, Verdict::Fail);
    let fewer = evaluate(&base, &measurement(&[1.0], 9.0), None);
    assert_eq!(fewer[2].verdict, Verdict::Improved);
    assert!(passes(&fewer));
}

#[test]
fn missing_and_new_checks_fail() {
    let base = first_baseline(&measurement(&[1.0], 10.0), 1);
    let mut m = measurement(&[1.0], 10.0);
    m.counters[0].check = "renamed".into();
    let rows = evaluate(&base, &m, None);
    assert!(rows
        .iter()
        .any(|r| r.check == "renamed" && r.verdict == Verdict::NoBaseline));
    assert!(rows
        .iter()
        .any(|r| r.check == "pages_per_scan_cold/manifest_beyond"
            && r.verdict == Verdict::NotMeasured));
    assert!(!passes(&rows));
    assert!(explain_failures(&rows).contains("renamed"));
}

#[test]
fn record_keeps_slack_and_file_round_trips() -> Result<(), Box<dyn std::error::Error>> {
    let mut first = first_baseline(&measurement(&[1.0], 10.0), 1);
    first.ratios[0].slack = 0.5;
    let again = GateBaseline::record(
        &measurement(&[1.1], 9.0),
        GateShape::new("ci", 1, 1),
        provenance(),
        Some(&first),
    );
    assert_eq!(again.ratios[0].slack, 0.5);
    assert_eq!(again.ratios[1].slack, DEFAULT_SLACK);
    assert_eq!(again.counters[0].value, 9.0);

    let dir = tempfile::tempdir()?;
    let p = dir.path().join("gate.json");
    again.save(&p)?;
    let back = GateBaseline::load(&p)?;
    assert_eq!(back, again);
    assert!(back.check_scale(&p, "ci").is_ok());
    let e = back.check_scale(&p, "seed").err().map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.contains("--scale ci")));
    std::fs::write(&p, b"{\"schema_version\": 7}")?;
    assert!(matches!(
        GateBaseline::load(&p),
        Err(GateError::Schema { found: 7, .. })
    ));
    std::fs::write(&p, b"nonsense")?;
    let e = GateBaseline::load(&p).err().map(|e| e.to_string());
    assert!(e.is_some_and(|e| e.contains("is not a gate baseline")));
    Ok(())
}
