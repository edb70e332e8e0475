//! Tests of the PostgreSQL adapter's throwaway cluster: the install hint, and cleanup after
//! drop, panic and Ctrl-C.

use super::*;
use crate::api::CacheBudget;
use std::io::Write;

#[test]
fn missing_binaries_give_an_install_hint() {
    let err = match cluster::find_bindir(Some("/nonexistent/pg/bin".into()), false) {
        Err(e) => e,
        Ok(d) => panic!("found binaries in {}", d.display()),
    };
    assert!(matches!(err, Error::PostgresUnavailable { .. }));
    let msg = err.to_string();
    assert!(msg.contains("apt-get install postgresql"), "{msg}");
    assert!(msg.contains("AI_META_PG_URL"), "{msg}");
}

/// The cluster's directory is gone after a normal drop and after a panic unwinds past it.
#[test]
fn throwaway_cluster_is_removed_on_drop_and_on_panic() -> Result<()> {
    if let Err(e) = cluster::bindir_from_env() {
        println!("PostgreSQL skipped: {e}");
        return Ok(());
    }
    let opts = OpenOptions {
        cache: CacheBudget::mib(16),
        pg_url: Some(String::new()), // blank: ignore AI_META_PG_URL, start a cluster
        ..OpenOptions::default()
    };
    let engine = PgEngine::open(&opts)?;
    let root = engine
        .cluster_root()
        .ok_or_else(|| Error::backend(NAME, "test", "no cluster"))?;
    engine.put(b"k", b"v")?;
    // Several pooled sessions open: all must close before the server stops.
    let pool = engine.pool();
    pool.with(|_| pool.with(|_| engine.put(b"k2", b"v")))?;
    assert_eq!(pool.for_each_open(|_| Ok(()))?, 3);
    assert!(root.join("data").is_dir());
    drop(engine);
    assert!(!root.exists(), "{} left behind after drop", root.display());

    let seen = Mutex::new(None);
    let unwound = std::panic::catch_unwind(|| {
        if let Ok(engine) = PgEngine::open(&opts) {
            if let Ok(mut s) = seen.lock() {
                *s = engine.cluster_root();
            }
            panic!("deliberate panic with a live cluster");
        }
    });
    assert!(
        unwound.is_err(),
        "the cluster did not start, so nothing panicked"
    );
    let root = seen.lock().ok().and_then(|mut s| s.take());
    let root = root.ok_or_else(|| Error::backend(NAME, "test", "no cluster root"))?;
    assert!(
        !root.exists(),
        "{} left behind after a panic",
        root.display()
    );
    Ok(())
}

const CHILD_ENV: &str = "AIMETA_PG_CLUSTER_CHILD";

/// Run only as the child of the test below: opens a cluster, reports its directory and
/// blocks on stdin until it is killed.
#[test]
fn child_holds_a_cluster_until_killed() -> Result<()> {
    if std::env::var_os(CHILD_ENV).is_none() {
        return Ok(()); // not the child: nothing to do
    }
    let opts = OpenOptions {
        pg_url: Some(String::new()),
        ..OpenOptions::default()
    };
    let engine = PgEngine::open(&opts)?;
    let root = engine.cluster_root().unwrap_or_default();
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "ROOT={}", root.display());
    let _ = stdout.flush();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    Ok(())
}

/// Ctrl-C: SIGINT to the whole process group of a process holding a live cluster (as a
/// terminal sends it). No Drop runs, yet the watchdog must stop the server and remove the dir.
#[test]
fn throwaway_cluster_is_removed_after_ctrl_c() -> std::result::Result<(), Box<dyn std::error::Error>>
{
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    if std::env::var_os(CHILD_ENV).is_some() {
        return Ok(()); // the child runs only its own test
    }
    if let Err(e) = cluster::bindir_from_env() {
        println!("PostgreSQL skipped: {e}");
        return Ok(());
    }
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "postgres::tests::child_holds_a_cluster_until_killed",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no child stdout")?;
    let root = std::io::BufReader::new(stdout)
        .lines()
        .map_while(|l| l.ok())
        .find_map(|l| l.strip_prefix("ROOT=").map(std::path::PathBuf::from))
        .ok_or("the child never reported a cluster")?;
    assert!(
        root.join("data").is_dir(),
        "{} is not a live cluster",
        root.display()
    );
    // Ctrl-C reaches the whole foreground process group: signal it through the kill(2)
    // call itself, not the `kill` command, which a minimal Debian does not have.
    let group = rustix::process::Pid::from_raw(i32::try_from(child.id())?)
        .ok_or("the child has no process id")?;
    rustix::process::kill_process_group(group, rustix::process::Signal::INT)?;
    let status = child.wait()?;
    assert!(!status.success(), "the child should die of SIGINT");
    // The watchdog runs asynchronously; give it up to 30 s to stop the server and clean up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while root.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        !root.exists(),
        "{} left behind after Ctrl-C",
        root.display()
    );
    Ok(())
}
