//! A throwaway PostgreSQL cluster: `initdb` into a temp dir, `postgres` listening only on a
//! unix socket in that dir, stopped and removed when dropped.
//!
//! Cleanup does not rely on Drop alone. Right after the temp dir is made, a small watchdog
//! (`sh`, in its own process group, ignoring SIGINT/SIGHUP/SIGTERM) blocks reading a pipe
//! whose only writer is this process. When the pipe closes, because the cluster was dropped
//! (also during a panic unwind) or because this process died in any way (Ctrl-C, SIGKILL,
//! abort), the kernel closes the pipe and the watchdog sends the postmaster SIGINT (fast
//! shutdown), waits for `postmaster.pid` to go (30 s, then SIGKILL) and removes the dir. The
//! server runs in its own process group too, so a terminal's Ctrl-C reaches neither of them
//! directly. No signal handler is installed in the host process.
//!
//! initdb refuses to run as root, so as root both initdb and the server run as the `postgres`
//! system user (which Debian's postgresql package creates) and the temp dir is owned by it.

use crate::api::Durability;
use crate::error::{BoxError, Error, Result};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The superuser initdb creates; the adapter connects as it.
pub(super) const SUPERUSER: &str = "aimeta";
const START_TIMEOUT: Duration = Duration::from_secs(60);

const WATCHDOG: &str = r#"trap '' INT HUP TERM
cat >/dev/null
pid=$(head -n 1 "$1/postmaster.pid" 2>/dev/null)
if [ -n "$pid" ]; then
  kill -INT "$pid" 2>/dev/null
  i=0
  while [ -e "$1/postmaster.pid" ] && [ "$i" -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  if [ -e "$1/postmaster.pid" ]; then kill -KILL "$pid" 2>/dev/null; fi
fi
rm -rf "$2""#;

fn cluster_err(step: &'static str, detail: impl Into<String>) -> Error {
    Error::PostgresCluster {
        step,
        detail: detail.into(),
        source: None,
    }
}

fn cluster_io(step: &'static str, detail: impl Into<String>, e: std::io::Error) -> Error {
    Error::PostgresCluster {
        step,
        detail: detail.into(),
        source: Some(Box::new(e) as BoxError),
    }
}

/// The server binaries to use: `AI_META_PG_BINDIR` alone when it is set (an explicit choice
/// never falls back elsewhere), otherwise the system search of [`find_bindir`].
pub(super) fn bindir_from_env() -> Result<PathBuf> {
    match std::env::var_os("AI_META_PG_BINDIR").filter(|v| !v.is_empty()) {
        Some(dir) => find_bindir(Some(PathBuf::from(dir)), false),
        None => find_bindir(None, true),
    }
}

/// Finds a directory holding `initdb` and `postgres`: `explicit`, then (if `search_system`)
/// `pg_config --bindir`, the newest `/usr/lib/postgresql/*/bin`, and `PATH`.
pub(super) fn find_bindir(explicit: Option<PathBuf>, search_system: bool) -> Result<PathBuf> {
    let usable = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let mut searched = Vec::new();
    if let Some(d) = explicit {
        if usable(&d) {
            return Ok(d);
        }
        searched.push(format!("AI_META_PG_BINDIR={}", d.display()));
    }
    if search_system {
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
            let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if out.status.success() && usable(&d) {
                return Ok(d);
            }
        }
        searched.push("pg_config --bindir".into());
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let v = e.file_name().to_str()?.parse::<u32>().ok()?;
                Some((v, e.path().join("bin")))
            })
            .filter(|(_, d)| usable(d))
            .collect();
        versions.sort();
        if let Some((_, d)) = versions.pop() {
            return Ok(d);
        }
        searched.push("/usr/lib/postgresql/*/bin".into());
        if let Some(path) = std::env::var_os("PATH") {
            if let Some(d) = std::env::split_paths(&path).find(|d| usable(d)) {
                return Ok(d);
            }
        }
        searched.push("PATH".into());
    }
    Err(Error::PostgresUnavailable {
        searched: format!("looked in {}", searched.join(", ")),
    })
}

/// The (uid, gid) to run initdb and the server as: the `postgres` user when we are root.
fn run_as() -> Result<Option<(u32, u32)>> {
    let euid = std::fs::metadata("/proc/self")
        .map_err(|e| cluster_io("find our user id", "could not stat /proc/self", e))?
        .uid();
    if euid != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd")
        .map_err(|e| cluster_io("find the postgres user", "could not read /etc/passwd", e))?;
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() > 3 && f[0] == "postgres" {
            if let (Ok(uid), Ok(gid)) = (f[2].parse(), f[3].parse()) {
                return Ok(Some((uid, gid)));
            }
        }
    }
    Err(cluster_err(
        "find the postgres user",
        "running as root, and initdb refuses root, but there is no `postgres` user; install \
         the server package (apt-get install postgresql) or set AI_META_PG_URL",
    ))
}

/// A running throwaway cluster; dropping it stops the server and removes its directory.
pub(super) struct PgCluster {
    root: PathBuf,
    server: Option<Child>,
    watchdog: Option<(Child, ChildStdin)>,
}

impl PgCluster {
    /// initdb + start with `shared_buffers` = `cache_bytes` and durability settings from
    /// docs/fairness.md; returns once the server accepts connections.
    pub(super) fn start(
        cache_bytes: u64,
        durability: Durability,
    ) -> Result<(Self, postgres::Client)> {
        let bindir = bindir_from_env()?;
        let user = run_as()?;
        let root = tempfile::Builder::new()
            .prefix("aimeta-pg-")
            .tempdir()
            .map_err(|e| cluster_io("create temp dir", "could not create it under $TMPDIR", e))?
            .keep();
        let mut cluster = PgCluster {
            root: root.clone(),
            server: None,
            watchdog: None,
        };
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(&root, Some(uid), Some(gid))
                .map_err(|e| cluster_io("chown temp dir", root.display().to_string(), e))?;
        }
        let data = root.join("data");
        let as_user = |cmd: &mut Command| {
            if let Some((uid, gid)) = user {
                cmd.uid(uid).gid(gid);
            }
            cmd.current_dir(&root).process_group(0);
        };

        let mut wd = Command::new("sh");
        wd.arg("-c")
            .arg(WATCHDOG)
            .arg("pg-watchdog")
            .arg(&data)
            .arg(&root);
        wd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        as_user(&mut wd);
        let mut child = wd
            .spawn()
            .map_err(|e| cluster_io("start the cleanup watchdog", "could not run sh", e))?;
        if let Some(stdin) = child.stdin.take() {
            cluster.watchdog = Some((child, stdin));
        }

        let mut initdb = Command::new(bindir.join("initdb"));
        initdb.arg("-D").arg(&data);
        initdb.args([
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        as_user(&mut initdb);
        let out = initdb.output().map_err(|e| {
            cluster_io(
                "initdb",
                format!("could not run {}", bindir.join("initdb").display()),
                e,
            )
        })?;
        if !out.status.success() {
            return Err(cluster_err(
                "initdb",
                format!(
                    "{}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }

        let log_path = root.join("server.log");
        let log = File::create(&log_path)
            .map_err(|e| cluster_io("start", "could not create server.log", e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| cluster_io("start", "could not duplicate the log handle", e))?;
        let kb = cache_bytes.div_ceil(1024).max(128);
        let (fsync, sync_commit, fpw) = match durability {
            Durability::None => ("off", "off", "off"),
            Durability::Async => ("on", "off", "on"),
            Durability::Sync => ("on", "on", "on"),
        };
        let mut server = Command::new(bindir.join("postgres"));
        server.arg("-D").arg(&data).arg("-k").arg(&root);
        for setting in [
            "listen_addresses=".to_string(),
            format!("shared_buffers={kb}kB"),
            format!("fsync={fsync}"),
            format!("synchronous_commit={sync_commit}"),
            format!("full_page_writes={fpw}"),
            // The pool's sessions, and a few to spare for a psql beside a run.
            format!("max_connections={}", super::pool::POOL_SIZE + 4),
            "huge_pages=off".into(),
        ] {
            server.arg("-c").arg(setting);
        }
        server.stdin(Stdio::null()).stdout(log).stderr(log2);
        as_user(&mut server);
        cluster.server = Some(server.spawn().map_err(|e| {
            cluster_io(
                "start",
                format!("could not run {}", bindir.join("postgres").display()),
                e,
            )
        })?);
        let client = cluster.wait_ready(&log_path)?;
        Ok((cluster, client))
    }

    /// Polls the unix socket until the server accepts a connection, or fails with the log tail.
    fn wait_ready(&mut self, log_path: &Path) -> Result<postgres::Client> {
        let cfg = self.config();
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let exited = match self.server.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => Some(status.to_string()),
                Some(Err(e)) => Some(e.to_string()),
                _ => None,
            };
            if let Some(why) = exited {
                return Err(cluster_err(
                    "start",
                    format!("server exited ({why}); log: {}", log_tail(log_path)),
                ));
            }
            match cfg.connect(postgres::NoTls) {
                Ok(client) => return Ok(client),
                Err(e) if Instant::now() >= deadline => {
                    return Err(Error::PostgresCluster {
                        step: "connect",
                        detail: format!(
                            "no connection after {START_TIMEOUT:?}; log: {}",
                            log_tail(log_path)
                        ),
                        source: Some(Box::new(e)),
                    })
                }
                Err(_) => std::thread::sleep(Duration::from_millis(25)),
            }
        }
    }

    /// How to connect to the server: its unix socket, as the superuser.
    pub(super) fn config(&self) -> postgres::Config {
        let mut cfg = postgres::Config::new();
        cfg.host_path(&self.root)
            .port(5432)
            .user(SUPERUSER)
            .dbname("postgres");
        cfg
    }

    /// The cluster's directory (data, socket and server log).
    #[cfg(test)]
    pub(super) fn root(&self) -> &Path {
        &self.root
    }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}

impl Drop for PgCluster {
    /// Closes the watchdog's pipe (it stops the server and removes the dir), reaps both
    /// processes, and removes the dir itself if the watchdog could not.
    fn drop(&mut self) {
        let watchdog = self.watchdog.take().map(|(child, stdin)| {
            drop(stdin);
            child
        });
        if let Some(mut server) = self.server.take() {
            if watchdog.is_none() {
                let _ = server.kill();
            }
            let _ = server.wait();
        }
        if let Some(mut child) = watchdog {
            let _ = child.wait();
        }
        if self.root.exists() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}
