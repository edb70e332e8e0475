//! The committed Mooncake trace replayed on this engine (path keys and its native lookup;
//! chained keys bisected at 10 %): the hit count its lookups find
//! equals the harness's cache model exactly, 105,710 of 288,500 blocks (36.6 %) with
//! unlimited capacity, and the 10 % capacity's evictions keep the two in step.

use aimeta_adapters::{open, CacheBudget, Durability, EngineKind, OpenOptions};
use aimeta_workloads::trace::{
    committed_trace_path, prepare, read_trace, replay, ReplayOptions, Schedule, TraceMethod,
};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn replay_hits(
    capacity: Option<u32>,
    method: TraceMethod,
) -> Result<(u64, Schedule), Box<dyn std::error::Error>> {
    let trace = read_trace(&committed_trace_path())?;
    let schedule = Schedule::new(&trace, 1, capacity)?;
    let dir = tempfile::tempdir()?;
    let options = OpenOptions {
        cache: CacheBudget::mib(32),
        durability: Durability::Async,
        ..OpenOptions::default()
    };
    let engine = open(EngineKind::Aimeta, dir.path(), &options)?;
    prepare(engine.as_ref(), &schedule, method.design())?;
    let outcome = replay(
        engine.as_ref(),
        &schedule,
        method,
        &ReplayOptions::default(),
        &|_| {},
    )?;
    assert_eq!(outcome.requests, 12_031);
    assert_eq!(
        outcome.inserted - outcome.evicted,
        engine_blocks(engine.as_ref(), method)?
    );
    Ok((outcome.hits, schedule))
}

/// Blocks the engine holds at the end (its keys minus `kv` and the model entry for path
/// keys).
fn engine_blocks(
    engine: &dyn aimeta_adapters::KvEngine,
    method: TraceMethod,
) -> Result<u64, Box<dyn std::error::Error>> {
    let all = engine.count_range(&[0], &[0xFF; 33])?;
    Ok(match method.design() {
        aimeta_workloads::trace::KeyDesign::Path => all - 2,
        aimeta_workloads::trace::KeyDesign::Chained => all,
    })
}

#[test]
fn unlimited_capacity_hits_the_documented_105_710_blocks_on_the_engine_and_the_model() -> TestResult
{
    let (hits, schedule) = replay_hits(None, TraceMethod::PathNative)?;
    assert_eq!(schedule.model_hits(), 105_710);
    assert_eq!(schedule.blocks_requested(), 288_500);
    assert_eq!(hits, 105_710);
    assert_eq!(
        format!("{:.1} %", hits as f64 * 100.0 / 288_500.0),
        "36.6 %"
    );
    Ok(())
}

#[test]
fn a_tenth_of_the_blocks_evicts_and_still_hits_what_the_model_hits() -> TestResult {
    let (hits, schedule) = replay_hits(Some(10), TraceMethod::ChainedBisect)?;
    assert_eq!(hits, schedule.model_hits());
    assert!(hits < 105_710, "{hits}");
    Ok(())
}
