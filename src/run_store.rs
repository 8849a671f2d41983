//! The run directory: where a run's per-file results, aggregate and report live, and the
//! names they get.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::RlmError;
use crate::fs_atomic::write_atomic;
use crate::input::sha256_hex;

/// Longest sanitized stem before it is shortened (file systems allow 255 bytes a name).
const MAX_STEM: usize = 180;

/// The directories and files of one run.
#[derive(Debug, Clone)]
pub struct RunStore {
    /// `{output-dir}`: per-file results, aggregate, report.json.
    pub dir: PathBuf,
    /// `.aiwg/rlm/batch-{timestamp}-report.md`.
    pub report_md: PathBuf,
    /// `YYYY-MM-DD-HHMMSS` (UTC), unique among this project's runs.
    pub timestamp: String,
}

impl RunStore {
    /// Picks the run's timestamp (unique: `-2`, `-3`… when a run started the same second)
    /// and creates the output directory.
    pub fn create(rlm_dir: &Path, output_dir: Option<&Path>) -> Result<Self, RlmError> {
        std::fs::create_dir_all(rlm_dir).map_err(|e| RlmError::io(rlm_dir, e))?;
        let base = utc_timestamp(SystemTime::now());
        let mut timestamp = base.clone();
        let mut n = 1;
        loop {
            let report = rlm_dir.join(format!("batch-{timestamp}-report.md"));
            let default_dir = rlm_dir.join(format!("batch-{timestamp}"));
            if !report.exists() && (output_dir.is_some() || !default_dir.exists()) {
                break;
            }
            n += 1;
            timestamp = format!("{base}-{n}");
        }
        let dir = output_dir.map_or_else(|| rlm_dir.join(format!("batch-{timestamp}")), Path::to_path_buf);
        std::fs::create_dir_all(&dir).map_err(|e| RlmError::io(&dir, e))?;
        Ok(RunStore {
            report_md: rlm_dir.join(format!("batch-{timestamp}-report.md")),
            dir,
            timestamp,
        })
    }

    /// Writes a file of the run directory atomically.
    pub fn write(&self, name: &str, content: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join(name);
        write_atomic(&path, content.as_bytes())?;
        Ok(path)
    }
}

/// `src/auth/login.ts` → `src-auth-login.ts`: only `[A-Za-z0-9._-]`, never `..`, never a
/// separator, never empty, never hidden.
pub fn sanitize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        // No "..": a dot never follows a dot.
        if c == '.' && out.ends_with('.') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_start_matches(['.', '-']).trim_end_matches('.');
    let mut stem = if trimmed.is_empty() {
        "file".to_string()
    } else {
        trimmed.to_string()
    };
    if stem.len() > MAX_STEM {
        let hash = &sha256_hex(path.as_bytes())[..12];
        stem.truncate(MAX_STEM - 13);
        stem = format!("{}-{hash}", stem.trim_end_matches('.'));
    }
    stem
}

/// One unique `{sanitized}.result.md` name per path, in the given order: a collision gets
/// the first 8 hex characters of the path's hash appended.
pub fn result_names(paths: &[&str]) -> Vec<String> {
    let mut seen = HashSet::with_capacity(paths.len());
    paths
        .iter()
        .map(|path| {
            let stem = sanitize(path);
            let mut name = format!("{stem}.result.md");
            let mut salt = 0u32;
            while !seen.insert(name.to_ascii_lowercase()) {
                let hash = sha256_hex(format!("{path}#{salt}").as_bytes());
                name = format!("{stem}-{}.result.md", &hash[..8]);
                salt += 1;
            }
            name
        })
        .collect()
}

/// `YYYY-MM-DD-HHMMSS` in UTC.
pub fn utc_timestamp(time: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(time);
    format!("{y:04}-{mo:02}-{d:02}-{h:02}{mi:02}{s:02}")
}

/// RFC 3339 in UTC, for reports.
pub fn utc_rfc3339(time: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = civil(time);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// Calendar fields of a time, in UTC (Howard Hinnant's days-from-civil inverse).
fn civil(time: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sanitized_names_stay_inside() {
        assert_eq!(sanitize("src/auth/login.ts"), "src-auth-login.ts");
        assert_eq!(sanitize("../../etc/passwd"), "etc-passwd");
        assert_eq!(sanitize("/abs/a b.py"), "abs-a-b.py");
        assert_eq!(sanitize("a/..b"), "a-.b");
        assert_eq!(sanitize(".."), "file");
        for p in ["../x", "a/../../b", "...", "x/.../y", "C:\\win\\f.txt", "ü/ß.md"] {
            let s = sanitize(p);
            assert!(
                !s.contains("..") && !s.contains('/') && !s.contains('\\') && !s.starts_with('.'),
                "{p} -> {s}"
            );
        }
        let long = "d/".repeat(200) + "f.rs";
        assert!(sanitize(&long).len() <= MAX_STEM);
    }

    #[test]
    fn names_are_unique() {
        let names = result_names(&["src/a-b.ts", "src-a/b.ts", "src/a/b.ts", "SRC/a-b.ts"]);
        assert_eq!(names[0], "src-a-b.ts.result.md");
        let set: HashSet<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        assert_eq!(set.len(), 4);
    }

    #[test]
    fn timestamps() {
        let t = UNIX_EPOCH + Duration::from_secs(1_770_632_999);
        assert_eq!(utc_timestamp(t), "2026-02-09-102959");
        assert_eq!(utc_rfc3339(t), "2026-02-09T10:29:59Z");
    }
}
