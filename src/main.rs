//! The `ai-meta` command. Today it inspects an engine directory; the `run`, `report`,
//! `gate` and `repro` commands arrive with the workloads, reports and gate issues.

use std::process::ExitCode;

use aimeta_engine::{Tree, TreeConfig};

const USAGE: &str = "usage: ai-meta inspect DIR    print an engine tree's size, height and counters

The benchmark commands (run, report, gate, repro) are not built yet; see README.md.";

fn inspect(dir: &str) -> anyhow::Result<()> {
    let tree = Tree::open(TreeConfig::new(dir).cache_bytes(64 << 20))?;
    let report = tree.check_integrity()?;
    let m = tree.metrics();
    println!("directory      {dir}");
    println!("entries        {}", m.entries);
    println!("height         {}", m.height);
    println!("file pages     {} ({} free)", m.file_pages, m.free_pages);
    println!("leaf pages     {}", report.leaf_pages);
    println!("inner pages    {}", report.inner_pages);
    println!("overflow pages {}", report.overflow_pages);
    println!("size on disk   {} bytes", tree.size_on_disk()?);
    println!("integrity      ok");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["inspect", dir] => match inspect(dir) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ai-meta: {e:#}");
                ExitCode::FAILURE
            }
        },
        ["-h" | "--help" | "help"] => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
