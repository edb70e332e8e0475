//! What the runner reads from and does to the operating system: /proc/self/io, dropping
//! files from the page cache, and the provenance of a run (memory cgroups: cgroup.rs).

use std::fs;
use std::path::{Path, PathBuf};

/// Bytes this process caused to be read from storage (not from the page cache), from
/// /proc/self/io; 0 where the kernel does not report it.
pub fn os_read_bytes() -> u64 {
    read_bytes_in("/proc/self/io")
}

/// Bytes the calling thread caused to be read from storage, from /proc/thread-self/io; 0
/// where the kernel does not report it.
pub fn thread_os_read_bytes() -> u64 {
    read_bytes_in("/proc/thread-self/io")
}

/// The `read_bytes` line of a /proc `io` file; 0 when it cannot be read.
fn read_bytes_in(io: &str) -> u64 {
    fs::read_to_string(io)
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("read_bytes:")
                    .and_then(|v| v.trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

/// Drops every file under `dir` from the OS page cache (posix_fadvise DONTNEED after
/// fsync), so that the next reads come from storage.
pub fn drop_from_page_cache(dir: &Path) -> std::io::Result<()> {
    for entry in walk(dir)? {
        let f = fs::File::open(&entry)?;
        f.sync_all()?;
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)
            .map_err(std::io::Error::from)?;
    }
    Ok(())
}

/// Writes back every dirty page of the file system holding `dir` and waits for it
/// (`syncfs`): run before each timed phase, so that no engine's phase shares the device
/// with the write-back of an earlier load, an earlier engine's store or its removal (the
/// kernel flushes such pages for up to 30 seconds after they were written).
pub fn settle_file_system(dir: &Path) -> std::io::Result<()> {
    let f = fs::File::open(dir)?;
    rustix::fs::syncfs(&f).map_err(std::io::Error::from)
}

fn walk(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    for e in fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            out.extend(walk(&p)?);
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

fn first_line(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// CPU model, cores and memory of this machine.
pub fn machine() -> (String, u32, u64) {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
        * 1024;
    (cpu, cores, mem)
}

/// Kernel and OS, from uname(2) and /etc/os-release (no `uname` command needed).
pub fn os() -> String {
    let u = rustix::system::uname();
    let kernel = format!(
        "{} {}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy()
    );
    let distro = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_default();
    format!("{kernel} {distro}").trim().to_string()
}

/// The file system type holding `dir`, as the kernel names it in /proc/self/mountinfo
/// ("ext4", "xfs", "tmpfs"), or "unknown". `stat -f` read the superblock magic instead,
/// which ext2, ext3 and ext4 share, and reported ext4 as "ext2/ext3".
pub fn filesystem(dir: &Path) -> String {
    let Ok(dir) = fs::canonicalize(dir) else {
        return "unknown".into();
    };
    fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|info| mount_type(&info, &dir))
        .or_else(|| statfs_type(&dir))
        .unwrap_or_else(|| "unknown".into())
}

/// The file system type from statfs(2)'s magic number: for a directory whose mount
/// mountinfo does not show (inside a chroot, whose root is no mount point of its own).
/// ext2, ext3 and ext4 share one magic number, so they are named together.
fn statfs_type(dir: &Path) -> Option<String> {
    let st = rustix::fs::statfs(dir).ok()?;
    #[allow(clippy::unnecessary_cast)] // the field's type differs between backends
    let magic = (st.f_type as u64) & 0xffff_ffff;
    let name = match magic {
        0xef53 => "ext2/ext3/ext4",
        0x5846_5342 => "xfs",
        0x9123_683e => "btrfs",
        0x0102_1994 => "tmpfs",
        0x794c_7630 => "overlay",
        0xf2f5_2010 => "f2fs",
        0x2fc1_2fc1 => "zfs",
        0x6969 => "nfs",
        0x6573_5546 => "fuse",
        other => return Some(format!("statfs magic {other:#x}")),
    };
    Some(name.to_string())
}

/// The type of the mount holding `path` in a mountinfo table: the deepest mount point
/// that contains it, the later of two equal ones (a mount stacked on another hides it).
fn mount_type(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        // "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
        // the mount point is the fifth field, the type the first after " - ".
        let (Some(point), Some(kind)) = (
            line.split(' ').nth(4),
            line.split_once(" - ")
                .and_then(|(_, rest)| rest.split(' ').next()),
        ) else {
            continue;
        };
        let point = PathBuf::from(unescape_mount_field(point));
        if !path.starts_with(&point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, kind.to_string()));
        }
    }
    best.map(|(_, kind)| kind)
}

/// Undoes mountinfo's octal escapes ("\040" for a space, "\011", "\012", "\134").
fn unescape_mount_field(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u32, |n, b| n * 8 + u32::from(b - b'0')));
        match (bytes[i], octal) {
            (b'\\', Some(v)) if v <= 0xff => {
                out.push(v as u8);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The git commit of the current directory's checkout, with `-dirty` when it has changes.
pub fn git_commit() -> String {
    let rev = first_line("git", &["rev-parse", "--short=12", "HEAD"]);
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    if dirty {
        format!("{rev}-dirty")
    } else {
        rev
    }
}

/// rustc's version line.
pub fn rustc() -> String {
    first_line("rustc", &["--version"])
}

/// The current UTC time, RFC 3339, from the system clock (no `date` command needed).
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// `secs` after the Unix epoch as "YYYY-MM-DDTHH:MM:SSZ".
fn rfc3339(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's civil_from_days:
/// eras of 400 years, years counted from March so that the leap day comes last).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_come_out_in_rfc_3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century year divisible by 400), 12:34:56.
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(rfc3339(1_796_256_000), "2026-12-03T00:00:00Z");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn the_deepest_latest_mount_names_the_file_system() {
        let info = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /var/tmp rw shared:9 - tmpfs tmpfs rw
31 30 8:2 / /var/tmp/my\\040disk rw shared:10 - xfs /dev/sdb rw
32 22 0:27 / /var/tmp rw shared:11 - btrfs /dev/sdc rw
";
        let at = |p: &str| mount_type(info, Path::new(p));
        assert_eq!(at("/home/x").as_deref(), Some("ext4"));
        assert_eq!(at("/var/tmpfoo").as_deref(), Some("ext4"));
        assert_eq!(at("/var/tmp/work").as_deref(), Some("btrfs"));
        assert_eq!(at("/var/tmp/my disk/a").as_deref(), Some("xfs"));
        assert_eq!(mount_type("garbage", Path::new("/")), None);
    }

    #[test]
    fn this_machine_reports_its_file_system_and_kernel() {
        let fs = filesystem(Path::new("/"));
        assert_ne!(fs, "unknown");
        assert!(statfs_type(Path::new("/")).is_some());
        assert_ne!(fs, "ext2/ext3", "stat -f's name, not the kernel's");
        assert!(os().starts_with("Linux "), "{}", os());
    }
}
