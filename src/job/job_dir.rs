//! The job directory `.aiwg/rlm/jobs/{job_id}/` and every path in it:
//!
//! ```text
//! job.json                                  definition, settings (no secrets), state
//! data/{items}.json                         the ingested items
//! data/{phase}.json                         each phase's merged output
//! data/preclusters.json                     the reduce phase's programmatic clusters
//! batches/{phase}/batch-NNN-input.json      what a worker was sent
//! batches/{phase}/batch-NNN-output.json     what it answered (written before it counts)
//! batches/{phase}/batch-NNN-rejected.txt    its last answer, when it was never valid
//! prompts/                                  the resolved prompts and schemas
//! events.jsonl                              what happened, one JSON object a line
//! report.md, report.json                    the report
//! comments.jsonl                            `export --format github-comments`
//! ```
//!
//! Every write is atomic (temporary file, then rename), so a `kill -9` leaves each file
//! whole or absent.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::state::{JobRecord, RECORD_VERSION};
use crate::error::{OutputFailure, RlmError, StoreFailure, StoreRefusal};
use crate::fs_atomic::{write_atomic, Durability};
use crate::store::Timestamp;

/// One job's directory.
#[derive(Debug, Clone)]
pub struct JobDir {
    pub id: String,
    pub root: PathBuf,
}

/// `.aiwg/rlm/jobs` under `cwd`.
pub fn jobs_root(cwd: &Path) -> PathBuf {
    cwd.join(".aiwg").join("rlm").join("jobs")
}

impl JobDir {
    /// Creates a new job directory with a fresh id: `job-YYYY-MM-DD-HHMMSS` (`-2`, `-3`…
    /// when two jobs start in the same second; creating the directory is the claim).
    pub fn create(cwd: &Path) -> Result<Self, RlmError> {
        let root = jobs_root(cwd);
        fs_err::create_dir_all(&root)?;
        let base = format!("job-{}", Timestamp::now().to_compact());
        for n in 1..1000 {
            let id = if n == 1 { base.clone() } else { format!("{base}-{n}") };
            let dir = root.join(&id);
            match fs_err::create_dir(&dir) {
                Ok(()) => {
                    let job = JobDir { id, root: dir };
                    for sub in ["data", "batches", "prompts"] {
                        fs_err::create_dir_all(job.root.join(sub))?;
                    }
                    return Ok(job);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(OutputFailure::NoFreeJobId { root }.into())
    }

    /// The job named by `query` (an id or its unique beginning), or the newest one.
    pub fn open(cwd: &Path, query: Option<&str>) -> Result<Self, RlmError> {
        let ids = list_ids(cwd)?;
        if ids.is_empty() {
            return Err(StoreRefusal::NoJobs { jobs: jobs_root(cwd) }.into());
        }
        let id = match query {
            None => ids.last().cloned().unwrap_or_default(),
            Some(q) => {
                let q = q.trim();
                // (Every id starts with nothing: an empty id names no job.)
                let matching: Vec<&String> = ids
                    .iter()
                    .filter(|id| !q.is_empty() && (id.as_str() == q || id.starts_with(q)))
                    .collect();
                let shown = crate::escape::name(q);
                match matching.as_slice() {
                    [one] => (*one).clone(),
                    [] => {
                        return Err(StoreRefusal::UnknownJob {
                            query: q.to_string(),
                            jobs: jobs_root(cwd),
                        }
                        .into())
                    }
                    many => {
                        if let Some(exact) = many.iter().find(|id| id.as_str() == q) {
                            (*exact).clone()
                        } else {
                            return Err(RlmError::Usage(format!(
                                "'{shown}' names {} jobs ({}): give more of the id",
                                many.len(),
                                many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                            )));
                        }
                    }
                }
            }
        };
        Ok(JobDir {
            root: jobs_root(cwd).join(&id),
            id,
        })
    }

    pub fn job_json(&self) -> PathBuf {
        self.root.join("job.json")
    }

    /// `data/{name}.json`.
    pub fn data(&self, name: &str) -> PathBuf {
        self.root.join("data").join(format!("{name}.json"))
    }

    pub fn batches(&self, phase: &str) -> PathBuf {
        self.root.join("batches").join(phase)
    }

    pub fn batch_input(&self, phase: &str, n: usize) -> PathBuf {
        self.batches(phase).join(format!("batch-{n:03}-input.json"))
    }

    pub fn batch_output(&self, phase: &str, n: usize) -> PathBuf {
        self.batches(phase).join(format!("batch-{n:03}-output.json"))
    }

    pub fn batch_rejected(&self, phase: &str, n: usize) -> PathBuf {
        self.batches(phase).join(format!("batch-{n:03}-rejected.txt"))
    }

    /// `prompts/{NN}-{phase}.md` (`.v2.md`… after `rerun --prompt`).
    pub fn prompt(&self, index: usize, phase: &str, version: u32) -> PathBuf {
        let suffix = if version > 1 {
            format!(".v{version}")
        } else {
            String::new()
        };
        self.root
            .join("prompts")
            .join(format!("{:02}-{phase}{suffix}.md", index + 1))
    }

    pub fn schema(&self, index: usize, phase: &str) -> PathBuf {
        self.root
            .join("prompts")
            .join(format!("{:02}-{phase}.schema.json", index + 1))
    }

    pub fn context(&self) -> PathBuf {
        self.root.join("prompts").join("context.md")
    }

    pub fn events(&self) -> PathBuf {
        self.root.join("events.jsonl")
    }

    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }

    pub fn report_json(&self) -> PathBuf {
        self.root.join("report.json")
    }

    pub fn comments(&self) -> PathBuf {
        self.root.join("comments.jsonl")
    }

    /// Comments already posted (`export --post`), so a second post skips them.
    pub fn posted(&self) -> PathBuf {
        self.root.join("comments-posted.jsonl")
    }

    /// Reads `job.json`; a newer format is refused rather than misread.
    pub fn read_record(&self) -> Result<JobRecord, RlmError> {
        let record: JobRecord = read_json(&self.job_json())?;
        if record.version > RECORD_VERSION {
            return Err(StoreRefusal::NewerJobRecord {
                path: self.job_json(),
                version: record.version,
                reads: RECORD_VERSION,
            }
            .into());
        }
        Ok(record)
    }

    /// Writes `job.json` with the time of the change.
    pub fn write_record(&self, record: &mut JobRecord) -> Result<(), RlmError> {
        record.updated_at = Timestamp::now().to_rfc3339();
        write_json(&self.job_json(), record)
    }

    /// Appends one event line (best effort: an event log is not worth failing a job for).
    pub fn event(&self, event: &serde_json::Value) {
        let mut line = event.clone();
        if let Some(o) = line.as_object_mut() {
            o.insert("at".into(), Timestamp::now().to_rfc3339().into());
        }
        let appended = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.events())
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(e) = appended {
            tracing::debug!(error = %e, "cannot append to events.jsonl");
        }
    }
}

/// The ids of the jobs under `cwd`, oldest first (ids sort by time).
pub fn list_ids(cwd: &Path) -> Result<Vec<String>, RlmError> {
    let root = jobs_root(cwd);
    let entries = match fs_err::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().join("job.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort_by_key(|id| sort_key(id));
    Ok(ids)
}

/// `job-T`, `job-T-2`, … in time order, then by suffix number.
fn sort_key(id: &str) -> (String, u32) {
    let rest = id.strip_prefix("job-").unwrap_or(id);
    let (stamp, suffix) = rest.split_at(rest.len().min(17));
    (
        stamp.to_string(),
        suffix.strip_prefix('-').and_then(|n| n.parse().ok()).unwrap_or(1),
    )
}

/// Writes `value` as pretty JSON, atomically (parents created).
pub fn write_json<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<(), RlmError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| OutputFailure::JobJson {
        path: path.to_path_buf(),
        source,
    })?;
    bytes.push(b'\n');
    write_bytes(path, &bytes)
}

/// Writes `bytes` atomically (parents created).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<(), RlmError> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    // The error names the path already.
    Ok(write_atomic(path, bytes, Durability::Buffered)?)
}

/// Reads a JSON file into `T`, naming the file in any error.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T, RlmError> {
    let text = fs_err::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|source| {
        StoreFailure::NotWrittenByRlm {
            path: path.to_owned(),
            source,
        }
        .into()
    })
}

/// Reads a JSON file when it exists and is whole; `None` otherwise (a batch never
/// finished, or its file is damaged: it is done again).
pub fn read_json_if_whole<T: DeserializeOwned>(path: &Path) -> Option<T> {
    let text = fs_err::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}
