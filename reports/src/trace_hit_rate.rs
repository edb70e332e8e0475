//! The hit-rate trace chart: per tenant count, the hit rate at each capacity, with a
//! flag when replays of one setting disagree (they never should: every engine and key
//! design is checked against the harness's cache model) or an engine's count differs
//! from the model's.

use crate::chart::{Cell, Chart, Row, Section, ValueAxis, ValueKind};
use crate::format;
use crate::merge::Merged;
use crate::results::{Record, Status};
use crate::rows::missing_text;
use crate::trace::{capacity_label, tenants_label, LoopMode, Setting, Shape, TraceRecord};
use crate::trace_charts::capacity_blocks_label;
use crate::trace_charts::{trace_subtitle, STEMS};

/// Bar colour of the hit-rate chart: a property of the trace and capacity, not of an
/// engine, so none of the engines' colours.
const HIT_RATE_COLOUR: &str = "#79706e";

/// The hit rate of the usable replays at one shape: per (threads, mode) group whether
/// its replays agree, the group the bar shows (1 thread, closed loop where measured),
/// and any replay whose engine count differs from the harness's model.
struct ShapeHits<'a> {
    shown: Option<&'a Record>,
    disagreements: Vec<String>,
    model_mismatches: Vec<String>,
}

fn shape_hits<'a>(records: &[TraceRecord<'a>], shape: Shape) -> ShapeHits<'a> {
    let usable: Vec<(Setting, &Record)> = records
        .iter()
        .filter(|t| t.record.status == Status::Ok && t.record.trace.is_some())
        .filter_map(|t| Some((t.setting?, t.record)))
        .filter(|(s, _)| s.shape == shape)
        .collect();
    let mut groups: Vec<Setting> = Vec::new();
    for (s, _) in &usable {
        if !groups.contains(s) {
            groups.push(*s);
        }
    }
    let counts = |r: &Record| r.trace.as_ref().map(|t| (t.hits, t.blocks_requested));
    let who = |r: &Record| {
        let hits = r.trace.as_ref().map_or(0, |t| t.hits);
        let v = r.variant.as_deref().unwrap_or("");
        format!("{} {v} {}", r.engine, format::thousands(hits))
    };
    let mut disagreements = Vec::new();
    for g in &groups {
        let members: Vec<&Record> = usable
            .iter()
            .filter(|(s, _)| s == g)
            .map(|(_, r)| *r)
            .collect();
        let first = members.first().and_then(|r| counts(r));
        if members.iter().any(|r| counts(r) != first) {
            let list: Vec<String> = members.iter().map(|r| who(r)).collect();
            disagreements.push(format!("{}: {}", g.label(), list.join(", ")));
        }
    }
    let model_mismatches = usable
        .iter()
        .filter_map(|(s, r)| {
            let t = r.trace.as_ref()?;
            (t.hits != t.model_hits).then(|| {
                format!(
                    "{} {} at {}: engine {}, model {}",
                    r.engine,
                    r.variant.as_deref().unwrap_or(""),
                    s.label(),
                    format::thousands(t.hits),
                    format::thousands(t.model_hits)
                )
            })
        })
        .collect();
    let preferred = |s: &Setting| (s.mode != LoopMode::Closed, s.threads != 1, s.threads);
    let shown = usable
        .iter()
        .min_by(|a, b| preferred(&a.0).cmp(&preferred(&b.0)).then(a.0.cmp(&b.0)))
        .map(|(_, r)| *r);
    ShapeHits {
        shown,
        disagreements,
        model_mismatches,
    }
}

/// (b) The hit rate at each capacity, one section per tenant count.
pub(crate) fn hit_rate(merged: &Merged, records: &[TraceRecord<'_>]) -> Chart {
    let mut shapes: Vec<Shape> = Vec::new();
    for s in records.iter().filter_map(|t| t.setting) {
        if !shapes.contains(&s.shape) {
            shapes.push(s.shape);
        }
    }
    shapes.sort_by(|a, b| a.cmp(b));
    let mut tenants: Vec<u32> = shapes.iter().map(|s| s.tenants).collect();
    tenants.dedup();
    let mut footnotes = vec![
        "Blocks found cached by the lookups ÷ blocks requested. Every engine and key design \
         gets the same count (the harness checks each replay against its own cache model); \
         bars show the 1-thread closed-loop replays where measured."
            .to_string(),
    ];
    let mut sections = Vec::new();
    for n in tenants {
        let mut rows = Vec::new();
        for shape in shapes.iter().copied().filter(|s| s.tenants == n) {
            let hits = shape_hits(records, shape);
            let stats = hits.shown.and_then(|r| r.trace.as_ref());
            let mut label = capacity_label(shape.capacity_percent);
            if let Some(blocks) = stats.and_then(|t| t.capacity_blocks) {
                label.push_str(&capacity_blocks_label(
                    blocks,
                    stats.map_or(1, |t| t.tenants),
                ));
            }
            let (cell, mut annotation) = match stats {
                Some(t) => (
                    Cell::Value(t.hit_rate),
                    format!(
                        "{} of {} blocks",
                        format::thousands(t.hits),
                        format::thousands(t.blocks_requested)
                    ),
                ),
                None => {
                    let first = records
                        .iter()
                        .find(|t| t.setting.is_some_and(|s| s.shape == shape));
                    let why = first.map_or_else(|| "N/A".to_string(), |t| missing_text(t.record));
                    (Cell::Missing(why), String::new())
                }
            };
            if !hits.disagreements.is_empty() || !hits.model_mismatches.is_empty() {
                annotation.push_str(" · ENGINES DISAGREE: see the note below");
            }
            for d in &hits.disagreements {
                footnotes.push(format!(
                    "Engines disagree on the hits at {d}; this should never happen."
                ));
            }
            for m in &hits.model_mismatches {
                footnotes.push(format!("Hits differ from the harness's model: {m}."));
            }
            rows.push(Row {
                what: format!("hit rate, {}, capacity {label}", tenants_label(n)),
                label,
                colour: HIT_RATE_COLOUR,
                faded: false,
                cell,
                annotation: Some(annotation).filter(|a| !a.is_empty()),
                tails: vec![],
            });
        }
        sections.push(Section {
            header: Some(tenants_label(n)),
            rows,
        });
    }
    let value_axis = ValueAxis {
        title: "hit rate: blocks found cached ÷ blocks requested".to_string(),
        include: vec![],
        reference: None,
        kind: ValueKind::Share,
        better: "higher is better".to_string(),
        force_log: false,
    };
    let mut sub = trace_subtitle(merged);
    sub.push("Mooncake trace; capacity as a share of the replay's distinct blocks".to_string());
    Chart::new(
        STEMS[1],
        "Hit rate against capacity".to_string(),
        sub,
        value_axis,
        sections,
        footnotes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::svg::LIGHT;
    use crate::testing::{assert_contains_all, trace_mix, trace_record as rec, TestResult};
    use crate::trace::trace_records;

    fn chart(results: &crate::Results) -> String {
        let merged = Merged::single(results.clone());
        hit_rate(&merged, &trace_records(results)).render(&LIGHT)
    }

    #[test]
    fn hit_rates_per_capacity_and_tenants_agree() -> TestResult {
        let mut results = trace_mix();
        let mut four = rec("aimeta", "chained_probe", Some(10), 1);
        four.dataset = "mooncake_x4_cap10".into();
        if let Some(t) = four.trace.as_mut() {
            (t.tenants, t.hits, t.model_hits, t.hit_rate) = (4, 72_125, 72_125, 0.25);
        }
        // An 8-thread replay may interleave tenants otherwise: not a disagreement.
        if let Some(t) = results.records[8].trace.as_mut() {
            (t.hits, t.model_hits) = (t.hits - 1, t.model_hits - 1);
        }
        results.records.push(four);
        let svg = chart(&results);
        let needles = [
            ">1 tenant</text>",
            ">4 tenants</text>",
            ">10 % (18,279 blocks)</text>",
            ">50 % (91,395 blocks)</text>",
            ">unlimited</text>",
            ">14.2 % · 41,000 of 288,500 blocks</text>",
            ">36.6 % · 105,710 of 288,500 blocks</text>",
            ">25.0 % · 72,125 of 288,500 blocks</text>",
            "hit rate: blocks found cached ÷ blocks requested (higher is better)",
            ">100 %</text>",
        ];
        assert_contains_all(&svg, &needles);
        assert!(!svg.contains("DISAGREE") && !svg.contains("disagree on"));
        Ok(())
    }

    #[test]
    fn engines_that_disagree_on_the_hit_rate_are_flagged() -> TestResult {
        let mut results = trace_mix();
        if let Some(t) = results.records[5].trace.as_mut() {
            t.hits -= 1;
        }
        if let Some(t) = results.records[6].trace.as_mut() {
            t.model_hits += 1;
        }
        let svg = chart(&results);
        let needles = [
            "ENGINES DISAGREE: see the note below",
            "Engines disagree on the hits at 1 tenant",
            "lmdb chained_probe 40,999",
            "model: lmdb chained_probe at 1 tenant · capacity 50 %",
            "engine 98,000, model 98,001",
        ];
        assert_contains_all(&svg, &needles);
        Ok(())
    }
}
