//! `OutputFailure`: the run directory (or another file rlm writes) cannot be created or
//! written, or holds files rlm will not replace. The I/O error is kept as the source; the
//! variant says which flag or directory it concerns.

use std::path::PathBuf;

/// What rlm must write cannot be written (exit 2): nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum OutputFailure {
    /// `--output-dir` (or the run directory rlm chose) cannot be created or read.
    #[error("--output-dir: {0}")]
    OutputDir(#[source] std::io::Error),
    /// `--output-dir` names a file.
    #[error("--output-dir {} is a file, not a directory: pass a directory (it is created if missing)", dir.display())]
    OutputDirIsFile { dir: PathBuf },
    /// `--output-dir` holds files of something other than an rlm run.
    #[error("--output-dir {} is not empty and holds no earlier rlm run: pass a new or empty directory", dir.display())]
    OutputDirNotEmpty { dir: PathBuf },
    /// An earlier run's output could not be removed.
    #[error("--output-dir: cannot replace an earlier run's output: {0}")]
    CannotReplace(#[source] std::io::Error),
    /// The run directory's lock file cannot be taken.
    #[error("cannot lock the run directory {}: {source}", dir.display())]
    Lock {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The run directory cannot take a file.
    #[error("the run directory {} is not writable: {source}", dir.display())]
    RunDirUnwritable {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output directory's probe (its marker) cannot be written.
    #[error("the output directory is not writable: {0}")]
    OutputDirUnwritable(#[source] std::io::Error),
    /// `--save-trajectory` cannot be opened.
    #[error("--save-trajectory: {0}")]
    Trajectory(#[source] std::io::Error),
    /// `--sarif` names a directory (`shown` as the user sees the path).
    #[error("--sarif {shown} is a directory: pass a path in a directory that can be written; nothing was sent")]
    SarifIsDirectory { shown: String },
    /// `--sarif` is under a file (`file`, the nearest path on its way that exists).
    #[error(
        "--sarif {shown} cannot be written: {file} is not a directory: pass a path in a directory that can be \
         written; nothing was sent"
    )]
    SarifUnderFile { shown: String, file: String },
    /// `--sarif` is in a directory that cannot be written (`dir`, the nearest on its way that
    /// exists: the directories missing below it are made when the log is written).
    #[error(
        "--sarif {shown} cannot be written in {dir} ({}): pass a path in a directory that can be written; nothing \
         was sent",
        source.kind()
    )]
    SarifUnwritable {
        shown: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// Every job id tried is taken.
    #[error("cannot find a free job id under {}", root.display())]
    NoFreeJobId { root: PathBuf },
    /// A JSON file of a job cannot be serialized.
    #[error("{}: {source}", path.display())]
    JobJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The skill cannot be installed (its files are there and differ, …).
    #[error(transparent)]
    Skill(crate::skill::SkillError),
}
