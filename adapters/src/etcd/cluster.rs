//! A throwaway etcd cluster: one or three `etcd` members on loopback ports picked here, each
//! with its data directory and log under `<engine dir>/etcd-cluster`, stopped and removed
//! when dropped.
//!
//! Cleanup does not rely on Drop alone, as with the PostgreSQL adapter's cluster: before any
//! member starts, a small watchdog (`sh`, in a process group of its own, ignoring
//! SIGINT/SIGHUP/SIGTERM) blocks reading a pipe whose only writer is this process. Every
//! member is started in the watchdog's process group. When the pipe closes, because the
//! cluster was dropped (also during a panic unwind) or because this process died in any way
//! (Ctrl-C, SIGKILL, abort), the watchdog sends SIGTERM to its whole group (the members;
//! it ignores the signal itself), waits up to 10 s for every member's process to go, sends
//! SIGKILL to any still there, and removes the cluster's directory. A terminal's Ctrl-C
//! reaches the harness's group, not the members'. No signal handler is installed here.
//!
//! A monitor thread polls the members' processes every 50 ms; once one has exited, every
//! later call of the adapter fails with [`Error::EtcdMemberDied`] naming it, even though a
//! three-member cluster still answers without it: the cluster measured is gone.

use crate::error::{BoxError, Error, Result};
use std::fs::File;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the monitor looks at the members' processes.
const MONITOR_PERIOD: Duration = Duration::from_millis(50);
/// How long a failed request waits for a member's exit to become visible before it is
/// reported as the request's own error.
const DEATH_GRACE: Duration = Duration::from_millis(500);

/// The cleanup watchdog; `$1` is the cluster's directory.
const WATCHDOG: &str = r#"trap '' INT HUP TERM
cat >/dev/null
kill -TERM -- -$$ 2>/dev/null
alive() {
  for f in "$1"/member-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || continue
    case "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" in Z|X|"") ;; *) return 0 ;; esac
  done
  return 1
}
i=0
while alive "$1" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i+1)); done
for f in "$1"/member-*.pid; do
  [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
done
rm -rf "$1""#;

fn cluster_err(step: &'static str, detail: impl Into<String>) -> Error {
    Error::EtcdCluster {
        step,
        detail: detail.into(),
        source: None,
    }
}

fn cluster_io(step: &'static str, detail: impl Into<String>, e: std::io::Error) -> Error {
    Error::EtcdCluster {
        step,
        detail: detail.into(),
        source: Some(Box::new(e) as BoxError),
    }
}

/// The `etcd` binary: `AI_META_ETCD_BIN` alone when it is set (an explicit choice never
/// falls back elsewhere), otherwise `etcd` on `PATH`, then `/usr/bin/etcd`.
pub(crate) fn find_etcd() -> Result<PathBuf> {
    let usable = |p: &Path| p.is_file();
    if let Some(explicit) = std::env::var_os("AI_META_ETCD_BIN").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(explicit);
        if usable(&p) {
            return Ok(p);
        }
        return Err(Error::EtcdUnavailable {
            searched: format!("looked at AI_META_ETCD_BIN={}", p.display()),
        });
    }
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(p) = std::env::split_paths(&path)
            .map(|d| d.join("etcd"))
            .find(|p| usable(p))
        {
            return Ok(p);
        }
    }
    let fallback = PathBuf::from("/usr/bin/etcd");
    if usable(&fallback) {
        return Ok(fallback);
    }
    Err(Error::EtcdUnavailable {
        searched: "looked in PATH and /usr/bin".into(),
    })
}

/// What the members are started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClusterConfig {
    /// 1 or 3.
    pub(crate) members: usize,
    /// `--quota-backend-bytes`.
    pub(crate) quota_bytes: u64,
    /// `--max-txn-ops`.
    pub(crate) max_txn_ops: usize,
    /// `--max-request-bytes`.
    pub(crate) max_request_bytes: usize,
    /// How long the members have to become healthy.
    pub(crate) start_timeout: Duration,
}

/// One member: its name, URLs, process and log.
struct Member {
    name: String,
    client_url: String,
    log: PathBuf,
    child: Option<Child>,
}

impl Member {
    fn describe(&self) -> String {
        let pid = self.child.as_ref().map_or(0, Child::id);
        format!("{} ({}, pid {pid})", self.name, self.client_url)
    }
}

/// The first member found dead by the monitor.
#[derive(Debug, Clone)]
struct Death {
    member: String,
    status: String,
    log_tail: String,
}

/// A running throwaway cluster; dropping it stops the members and removes its directory.
pub(crate) struct EtcdCluster {
    root: PathBuf,
    members: Arc<Mutex<Vec<Member>>>,
    watchdog: Option<(Child, ChildStdin)>,
    dead: Arc<AtomicBool>,
    death: Arc<Mutex<Option<Death>>>,
    monitor: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

/// Free loopback ports, all bound at once so that none is handed out twice.
pub(crate) fn pick_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| cluster_io("pick ports", "could not bind a loopback port", e))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| cluster_io("pick ports", "could not read a bound port", e))
}

fn url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// The last eight lines of a member's log, on one line.
pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}

impl EtcdCluster {
    /// Starts `config.members` members under `dir/etcd-cluster` on ports picked here.
    pub(crate) fn start(dir: &Path, config: ClusterConfig) -> Result<Self> {
        let ports = pick_ports(2 * config.members)?;
        Self::start_on(dir, config, &ports)
    }

    /// [`EtcdCluster::start`] on given ports: client, peer, client, peer, ...
    pub(crate) fn start_on(dir: &Path, config: ClusterConfig, ports: &[u16]) -> Result<Self> {
        let etcd = find_etcd()?;
        if ports.len() < 2 * config.members {
            return Err(cluster_err("pick ports", "two ports per member are needed"));
        }
        let root = dir.join("etcd-cluster");
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root)
            .map_err(|e| cluster_io("create directory", root.display().to_string(), e))?;
        let mut cluster = EtcdCluster {
            root: root.clone(),
            members: Arc::new(Mutex::new(Vec::new())),
            watchdog: None,
            dead: Arc::new(AtomicBool::new(false)),
            death: Arc::new(Mutex::new(None)),
            monitor: None,
        };

        let mut wd = Command::new("sh");
        wd.arg("-c").arg(WATCHDOG).arg("etcd-watchdog").arg(&root);
        wd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir(&root)
            .process_group(0);
        let mut child = wd
            .spawn()
            .map_err(|e| cluster_io("start the cleanup watchdog", "could not run sh", e))?;
        let group = i32::try_from(child.id()).unwrap_or(0);
        match child.stdin.take() {
            Some(stdin) => cluster.watchdog = Some((child, stdin)),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(cluster_err("start the cleanup watchdog", "no pipe to it"));
            }
        }

        let names: Vec<String> = (0..config.members).map(|i| format!("m{i}")).collect();
        let initial_cluster = names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{n}={}", url(ports[2 * i + 1])))
            .collect::<Vec<_>>()
            .join(",");
        let token = format!("aimeta-{}-{}", std::process::id(), ports[0]);
        for (i, name) in names.iter().enumerate() {
            let client_url = url(ports[2 * i]);
            let peer_url = url(ports[2 * i + 1]);
            let log = root.join(format!("member-{i}.log"));
            let out = File::create(&log).map_err(|e| {
                cluster_io("start", format!("could not create {}", log.display()), e)
            })?;
            let err = out
                .try_clone()
                .map_err(|e| cluster_io("start", "could not duplicate the log handle", e))?;
            let mut cmd = Command::new(&etcd);
            cmd.arg(format!("--name={name}"))
                .arg(format!(
                    "--data-dir={}",
                    root.join(format!("member-{i}")).display()
                ))
                .arg(format!("--listen-client-urls={client_url}"))
                .arg(format!("--advertise-client-urls={client_url}"))
                .arg(format!("--listen-peer-urls={peer_url}"))
                .arg(format!("--initial-advertise-peer-urls={peer_url}"))
                .arg(format!("--initial-cluster={initial_cluster}"))
                .arg("--initial-cluster-state=new")
                .arg(format!("--initial-cluster-token={token}"))
                .arg(format!("--quota-backend-bytes={}", config.quota_bytes))
                .arg(format!("--max-txn-ops={}", config.max_txn_ops))
                .arg(format!("--max-request-bytes={}", config.max_request_bytes))
                // Old revisions are compacted away as Kubernetes' API server does, so
                // that a long run's history does not fill the quota.
                .arg("--auto-compaction-mode=revision")
                .arg("--auto-compaction-retention=1000")
                .arg("--logger=zap")
                .arg("--log-outputs=stderr")
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .current_dir(&root)
                .process_group(group);
            let child = cmd
                .spawn()
                .map_err(|e| cluster_io("start", format!("could not run {}", etcd.display()), e))?;
            let pid_file = root.join(format!("member-{i}.pid"));
            let pid_written = std::fs::write(&pid_file, child.id().to_string());
            cluster.lock_members()?.push(Member {
                name: name.clone(),
                client_url,
                log,
                child: Some(child),
            });
            pid_written.map_err(|e| {
                cluster_io(
                    "start",
                    format!("could not write {}", pid_file.display()),
                    e,
                )
            })?;
        }
        cluster.start_monitor();
        Ok(cluster)
    }

    fn lock_members(&self) -> Result<std::sync::MutexGuard<'_, Vec<Member>>> {
        self.members
            .lock()
            .map_err(|_| Error::Poisoned { engine: "etcd" })
    }

    /// The members' client URLs.
    pub(crate) fn endpoints(&self) -> Result<Vec<String>> {
        Ok(self
            .lock_members()?
            .iter()
            .map(|m| m.client_url.clone())
            .collect())
    }

    /// The cluster's directory (data, logs and pid files of every member).
    #[cfg(test)]
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The members' process ids, in member order.
    #[cfg(test)]
    pub(crate) fn pids(&self) -> Result<Vec<u32>> {
        Ok(self
            .lock_members()?
            .iter()
            .map(|m| m.child.as_ref().map_or(0, Child::id))
            .collect())
    }

    /// Fails naming the first member whose process has exited, with its log's tail: for
    /// the wait for health.
    pub(crate) fn check_exited(&self) -> Result<()> {
        let mut members = self.lock_members()?;
        for m in members.iter_mut() {
            let status = match m.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => status.to_string(),
                Some(Err(e)) => e.to_string(),
                _ => continue,
            };
            return Err(cluster_err(
                "start",
                format!(
                    "member {} exited ({status}); its log ends: {}",
                    m.describe(),
                    log_tail(&m.log)
                ),
            ));
        }
        Ok(())
    }

    /// The error for a cluster that did not become healthy: the member at `endpoint`, with
    /// its log's tail.
    pub(crate) fn not_healthy(&self, endpoint: &str, why: String) -> Error {
        let members = match self.lock_members() {
            Ok(m) => m,
            Err(e) => return e,
        };
        let (who, tail) = members
            .iter()
            .find(|m| m.client_url == endpoint)
            .map_or((endpoint.to_string(), String::new()), |m| {
                (m.describe(), log_tail(&m.log))
            });
        cluster_err(
            "health",
            format!("member {who} is not healthy: {why}; its log ends: {tail}"),
        )
    }

    /// Fails with [`Error::EtcdMemberDied`] once the monitor has seen a member exit.
    pub(crate) fn check_alive(&self) -> Result<()> {
        if !self.dead.load(Ordering::Acquire) {
            return Ok(());
        }
        let death = self
            .death
            .lock()
            .map_err(|_| Error::Poisoned { engine: "etcd" })?
            .clone();
        let d = death.unwrap_or(Death {
            member: "unknown".into(),
            status: "unknown".into(),
            log_tail: String::new(),
        });
        Err(Error::EtcdMemberDied {
            member: d.member,
            status: d.status,
            log_tail: d.log_tail,
        })
    }

    /// After a request failed: looks at the members' processes now, for up to
    /// [`DEATH_GRACE`], and fails with [`Error::EtcdMemberDied`] if one has exited. A
    /// member killed mid-request resets its connection before the monitor's next poll, and
    /// its process may take a moment to become a zombie after that.
    pub(crate) fn check_alive_now(&self) -> Result<()> {
        let deadline = std::time::Instant::now() + DEATH_GRACE;
        loop {
            if record_death(&self.members, &self.dead, &self.death)
                || std::time::Instant::now() >= deadline
            {
                return self.check_alive();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn start_monitor(&mut self) {
        let (tx, rx) = mpsc::channel::<()>();
        let members = Arc::clone(&self.members);
        let dead = Arc::clone(&self.dead);
        let death = Arc::clone(&self.death);
        let spawned = std::thread::Builder::new()
            .name("etcd-monitor".into())
            .spawn(move || loop {
                match rx.recv_timeout(MONITOR_PERIOD) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                if record_death(&members, &dead, &death) {
                    return;
                }
            });
        if let Ok(handle) = spawned {
            self.monitor = Some((tx, handle));
        }
    }
}

/// Records the first member found exited (with its log's tail) and sets `dead`; true when
/// one has exited, now or before.
fn record_death(
    members: &Mutex<Vec<Member>>,
    dead: &AtomicBool,
    death: &Mutex<Option<Death>>,
) -> bool {
    if dead.load(Ordering::Acquire) {
        return true;
    }
    let Ok(mut members) = members.lock() else {
        return false;
    };
    for m in members.iter_mut() {
        let status = match m.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(status))) => status.to_string(),
            Some(Err(e)) => e.to_string(),
            _ => continue,
        };
        if let Ok(mut d) = death.lock() {
            if d.is_none() {
                *d = Some(Death {
                    member: m.describe(),
                    status,
                    log_tail: log_tail(&m.log),
                });
            }
        }
        dead.store(true, Ordering::Release);
        return true;
    }
    false
}

impl Drop for EtcdCluster {
    /// Stops the monitor, closes the watchdog's pipe (it stops the members and removes the
    /// directory), reaps every process, and removes the directory itself if the watchdog
    /// could not.
    fn drop(&mut self) {
        if let Some((tx, handle)) = self.monitor.take() {
            let _ = tx.send(());
            let _ = handle.join();
        }
        let watchdog = self.watchdog.take().map(|(child, stdin)| {
            drop(stdin);
            child
        });
        if let Ok(mut members) = self.members.lock() {
            for m in members.iter_mut() {
                if let Some(mut child) = m.child.take() {
                    if watchdog.is_none() {
                        let _ = child.kill();
                    }
                    let _ = child.wait();
                }
            }
        }
        if let Some(mut child) = watchdog {
            let _ = child.wait();
        }
        if self.root.exists() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}
