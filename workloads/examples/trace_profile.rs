//! One replay of a trace on this engine, then its metrics: the profiling aid behind the
//! trace's entries in docs/performance.md, small enough to run under callgrind.
//!
//! `cargo run --release -p aimeta-workloads --example trace_profile -- [budget MiB] [method] [capacity %]`
//! (defaults: 1 MiB, path_native, unlimited); `TENANTS=n` replays n tenants at once
//! (default 1); `DURABILITY=none|sync` changes the default async log; `TRACE=file` replays another trace, e.g.
//! the first 1,500 lines of the committed one under
//! `valgrind --tool=callgrind`.

use aimeta_adapters::{aimeta::AimetaEngine, CacheBudget, Durability, OpenOptions};
use aimeta_workloads::trace::{
    committed_trace_path, prepare, read_trace, replay, ReplayOptions, Schedule, TraceMethod,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let budget_mib: u64 = args.first().map_or(Ok(1), |s| s.parse())?;
    let method = match args.get(1) {
        None => TraceMethod::PathNative,
        Some(name) => TraceMethod::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| format!("unknown method {name}"))?,
    };
    let capacity: Option<u32> = args.get(2).map(|s| s.parse()).transpose()?;
    let path = std::env::var_os("TRACE").map_or_else(committed_trace_path, Into::into);
    let tenants: u32 = std::env::var("TENANTS").map_or(Ok(1), |s| s.parse())?;
    let schedule = Schedule::new(&read_trace(&path)?, tenants, capacity)?;
    let dir = tempfile::tempdir_in(std::env::temp_dir())?;
    let options = OpenOptions {
        cache: CacheBudget::mib(budget_mib),
        durability: match std::env::var("DURABILITY").as_deref() {
            Ok("none") => Durability::None,
            Ok("sync") => Durability::Sync,
            _ => Durability::Async,
        },
        ..OpenOptions::default()
    };
    let engine = AimetaEngine::open(dir.path(), &options)?;
    prepare(&engine, &schedule, method.design())?;
    let out = replay(
        &engine,
        &schedule,
        method,
        &ReplayOptions::default(),
        &|_| {},
    )?;
    println!(
        "{} at {budget_mib} MiB: {} requests, {:?} in engine calls; mean lookup {:.1} us, insert batch {:.1} us, evict batch {:.1} us",
        method.name(),
        out.requests,
        out.busy,
        out.lookup.mean() / 1e3,
        out.insert.mean() / 1e3,
        out.evict.mean() / 1e3
    );
    println!("{:#?}", engine.tree().metrics());
    Ok(())
}
