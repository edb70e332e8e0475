//! `cargo bench --bench ai_meta`: every engine on every ai_meta workload, as criterion
//! benchmark groups per workload with `engine[/variant]/dataset` ids. Stores are loaded
//! outside the timed part; criterion's iter_custom times only the operations, and every
//! operation's latency also goes into the harness's own histograms, written at the end as
//! the project's results JSON (criterion's files are private to criterion).
//!
//! Environment: AI_META_SCALE (ci, quick (default), seed), AI_META_ENGINES (comma list, or
//! `all`, the default: every engine of the build),
//! AI_META_OUT (results path, default target/ai_meta/results-<scale>.json),
//! AI_META_WORK_DIR (where stores are built, default /var/tmp/ai-meta-work).
//! Filters work as usual: `cargo bench --bench ai_meta -- manifest_scan`.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Duration;

use aimeta_adapters::{Durability, EngineKind};
use aimeta_reports::{Record, Status};
use aimeta_workloads::run::{
    self, base_record, full_frame_variants, variants, BudgetMode, NoProgress, RunOptions, Session,
    Variant, Workload,
};
use aimeta_workloads::scale::{Scale, QUICK};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

/// Counts each thread's allocations, so that the results carry allocations per operation.
#[global_allocator]
static ALLOCATOR: aimeta_workloads::alloc_count::CountingAllocator =
    aimeta_workloads::alloc_count::CountingAllocator;

fn options() -> Result<RunOptions, String> {
    let scale = match std::env::var("AI_META_SCALE") {
        Ok(name) => Scale::by_name(&name)
            .ok_or_else(|| format!("unknown AI_META_SCALE {name:?}; valid: ci, quick, seed"))?,
        Err(_) => QUICK,
    };
    let engines = match std::env::var("AI_META_ENGINES") {
        Ok(list) if list.trim() == "all" => EngineKind::enabled(),
        Ok(list) => list
            .split(',')
            .map(|n| n.parse::<EngineKind>().map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?,
        Err(_) => EngineKind::enabled(),
    };
    Ok(RunOptions {
        scale,
        engines,
        workloads: Workload::default_set(),
        budget_mode: BudgetMode::Engine,
        cold: false,
        durability: Durability::Async,
        work_dir: std::env::var_os("AI_META_WORK_DIR")
            .map_or_else(|| PathBuf::from("/var/tmp/ai-meta-work"), PathBuf::from),
        seed: 42,
        pg_url: None,
        etcd_endpoints: None,
        read_consistency: Default::default(),
        full_frame: true,
        trace: None,
        rate: None,
        device_floor: None,
        command: format!("cargo bench --bench ai_meta (scale {})", scale.name),
    })
}

/// The criterion filter, if one was given (the first argument that is not a flag).
fn filter() -> Option<String> {
    std::env::args().skip(1).find(|a| !a.starts_with('-'))
}

fn wanted(filter: &Option<String>, id: &str) -> bool {
    filter.as_ref().is_none_or(|f| id.contains(f.as_str()))
}

fn bench(c: &mut Criterion) {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ai_meta bench: {e}");
            std::process::exit(2);
        }
    };
    let mut results = match run::new_results(&o) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ai_meta bench: {e}");
            std::process::exit(2);
        }
    };
    let filter = filter();
    let failure: RefCell<Option<String>> = RefCell::new(None);
    for planned in run::plan_datasets(&o) {
        let ds = planned.meta.name.clone();
        for &kind in &o.engines {
            let engine = kind.name();
            let plan: Vec<(Workload, Option<Variant>)> = o
                .workloads
                .iter()
                .copied()
                .filter(|w| *w != Workload::BulkLoad && w.runs_on(&planned.data))
                .flat_map(|w| {
                    variants(w, kind, o.full_frame)
                        .into_iter()
                        .map(move |v| (w, v))
                })
                .filter(|(w, v)| {
                    wanted(
                        &filter,
                        &format!(
                            "{}/{engine}/{}{ds}",
                            w.name(),
                            v.map(|v| format!("{v}/")).unwrap_or_default()
                        ),
                    )
                })
                .collect();
            if plan.is_empty() && !wanted(&filter, &format!("bulk_load/{engine}/{ds}")) {
                continue;
            }
            let mut s = match Session::load(&o, kind, &planned, false, &NoProgress) {
                Ok(Ok(s)) => s,
                Ok(Err(not)) => {
                    eprintln!("{engine} not measured: {not}");
                    results.records.push(Record {
                        status: not.status,
                        note: Some(not.why),
                        ..base_record(Workload::BulkLoad, &ds, kind, None)
                    });
                    continue;
                }
                Err(e) => {
                    eprintln!("ai_meta bench: {e}");
                    std::process::exit(1);
                }
            };
            results.records.push(s.load_record());
            let caps = match s.engine() {
                Ok(e) => e.capabilities(),
                Err(e) => {
                    eprintln!("ai_meta bench: {e}");
                    std::process::exit(1);
                }
            };
            let native = caps.native_longest_prefix;
            for (w, v) in plan {
                if w == Workload::ManifestCas {
                    if let Some(why) =
                        run::durability_not_offered(kind, caps.durability, o.durability)
                    {
                        results.records.push(Record {
                            status: Status::Unsupported,
                            note: Some(why),
                            ..base_record(w, &ds, kind, v)
                        });
                        continue;
                    }
                }
                if v == Some(Variant::Native) && !native {
                    results.records.push(Record {
                        status: Status::Unsupported,
                        note: Some(format!("{engine} has no native longest-prefix lookup")),
                        ..base_record(w, &ds, kind, v)
                    });
                    continue;
                }
                let (warm, _) = run::counts(&o, w);
                if let Err(e) = s.measure(w, v, warm.min(200), 0, &NoProgress) {
                    eprintln!("ai_meta bench: {e}");
                    std::process::exit(1);
                }
                let id = match v {
                    Some(v) => format!("{engine}/{v}"),
                    None => engine.to_string(),
                };
                let mut group = c.benchmark_group(w.name());
                group.bench_function(BenchmarkId::new(id, &ds), |b| {
                    b.iter_custom(|iters| match s.time_iters(w, v, iters) {
                        Ok(d) => d,
                        Err(e) => {
                            failure.borrow_mut().get_or_insert(e.to_string());
                            Duration::from_nanos(1)
                        }
                    })
                });
                group.finish();
                if let Some(e) = failure.borrow().as_ref() {
                    eprintln!("ai_meta bench: {e}");
                    std::process::exit(1);
                }
            }
            results.records.extend(s.records());
            drop(s);
            // This engine again in its full-frame reproduction of the seed report's bug.
            let ff_plan: Vec<(Workload, Variant)> = Workload::ALL
                .into_iter()
                .filter(|w| w.runs_on(&planned.data))
                .flat_map(|w| full_frame_variants(w).iter().map(move |&v| (w, v)))
                .filter(|(w, v)| wanted(&filter, &format!("{}/aimeta/{v}/{ds}", w.name())))
                .collect();
            if kind == EngineKind::Aimeta && o.full_frame && !ff_plan.is_empty() {
                if let Ok(Ok(mut ff)) = Session::load(&o, kind, &planned, true, &NoProgress) {
                    for (w, v) in ff_plan {
                        let mut group = c.benchmark_group(w.name());
                        group.bench_function(BenchmarkId::new(format!("aimeta/{v}"), &ds), |b| {
                            b.iter_custom(|iters| {
                                ff.time_iters(w, Some(v), iters)
                                    .unwrap_or(Duration::from_nanos(1))
                            })
                        });
                        group.finish();
                    }
                    results.records.extend(ff.records());
                }
            }
        }
        results.datasets.push(planned.meta);
    }
    // The trace replay last, outside criterion: a replay is one sequence whose cache
    // state evolves request by request, so repeating "iterations" of it would time a
    // different workload; each replay's engine calls are timed by the runner itself and
    // recorded in our JSON. Last, because it takes most of the run (about 55 minutes at
    // the quick scale on two cores): the criterion groups print their first results
    // within minutes of the build.
    if wanted(&filter, Workload::KvcacheTrace.name()) {
        match run::run_trace(&o, &NoProgress) {
            Ok((datasets, records)) => {
                println!("kvcache_trace: {} replays", records.len());
                results.datasets.extend(datasets);
                results.records.extend(records);
            }
            Err(e) => {
                eprintln!("ai_meta bench: {e}");
                std::process::exit(if e.is_bad_input() { 2 } else { 1 });
            }
        }
    }
    if results.records.iter().all(|r| r.status != Status::Ok) {
        eprintln!("ai_meta bench: nothing measured (filter {filter:?}); no results written");
        return;
    }
    let out = std::env::var_os("AI_META_OUT").map_or_else(
        || PathBuf::from(format!("target/ai_meta/results-{}.json", o.scale.name)),
        PathBuf::from,
    );
    match results.save(&out) {
        Ok(()) => println!("ai_meta results written to {}", out.display()),
        Err(e) => {
            eprintln!("ai_meta bench: {e}");
            std::process::exit(1);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    targets = bench
}
criterion_main!(benches);
