//! Execution: the bounded pool, the adaptive limiter, the retry policy, the shared
//! rate-limit cooldown, and the events they emit.

mod call;
mod cooldown;
mod event;
mod interrupt;
mod limiter;
mod pool;
mod retry;

pub use call::{call_with_retries, CallContext, CallFailure, CallResult, GRACE};
pub use cooldown::Cooldown;
pub use event::Event;
pub use interrupt::Interrupt;
pub use limiter::{Limiter, Place, Slot, WidthChange};
pub use pool::{run_pool, Flow, Job, JobMeta, Lost, Paid, PoolContext, PoolEnd, PoolHandler};
pub use retry::RetryPolicy;
