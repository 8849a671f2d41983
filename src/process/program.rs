//! Finding the program a command names, as the spawner will find it, before anything is
//! started: a missing or not executable program is a setup error said up front, not a
//! failure of every unit (or item) that would run it.

use std::path::{Path, PathBuf};

/// Why a program cannot be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramProblem {
    NotFound,
    NotExecutable(PathBuf),
}

/// Finds `program` as the spawner will: a name with a `/` relative to `cwd`, a bare name
/// on `PATH`. It must be a file this user may execute.
pub fn find_program(program: &str, cwd: &Path, path: Option<&str>) -> Result<PathBuf, ProgramProblem> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![cwd.join(program)]
    } else {
        std::env::split_paths(path.unwrap_or(""))
            .map(|dir| {
                let dir = if dir.as_os_str().is_empty() {
                    cwd.to_path_buf()
                } else {
                    cwd.join(dir)
                };
                dir.join(program)
            })
            .collect()
    };
    let mut not_executable = None;
    for candidate in candidates {
        if !candidate.is_file() {
            continue;
        }
        if is_executable(&candidate) {
            return Ok(candidate);
        }
        not_executable.get_or_insert(candidate);
    }
    Err(not_executable.map_or(ProgramProblem::NotFound, ProgramProblem::NotExecutable))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}
