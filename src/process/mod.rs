//! Supervised child processes for the command provider (`--provider command --command
//! 'claude -p --model haiku'`, issue 8): the command string split into argv without a
//! shell, and each call run in its own process group with a timeout, a grace period,
//! capped output, and no orphans — not on timeout, not on shutdown, not when the task
//! running it is aborted.

mod error;
mod priority;
mod process_group;
mod program;
mod split;
mod stderr_tail;
mod supervised;

pub use error::{FailureKind, ProcessError};
pub use priority::lower_for_depth;
pub use process_group::{group_alive, wait_for_group_death, ProcessGroup};
pub use program::{find_program, ProgramProblem};
pub use split::{split_command, SplitError};
pub use supervised::{run, CommandSpec, ProcessOutput, DEFAULT_GRACE, DEFAULT_MAX_STDOUT};
