//! Execution: the bounded pool, the adaptive limiter (width, rate-limit pauses), the retry
//! policy, and the events they emit.

mod ask;
mod call;
mod event;
mod interrupt;
mod limiter;
mod pool;
mod retry;
mod width_search;

pub use ask::{ask, reask_message, AskEnd, AskPolicy, Asked, ReaskWording, ReplyCheck, Start};
pub use call::{call_within_retries, CallContext, CallFailure, CallResult, GRACE};
pub use event::{Event, WidthWhy};
pub use interrupt::Interrupt;
pub use limiter::{Limiter, Place, RateBudget, Refused, Slot, Throttle, Throttled, WidthChange};
pub use pool::{run_pool, Flow, Job, JobMeta, Lost, Paid, PoolContext, PoolEnd, PoolHandler};
pub use retry::RetryPolicy;
