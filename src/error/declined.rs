//! `Declined`: the user answered no when asked to confirm.

/// The user answered no: nothing was done.
#[derive(Debug, thiserror::Error)]
pub enum Declined {
    /// The cost question: no model was called.
    #[error("cancelled: nothing was called")]
    Cost,
    /// `--post`'s question: no comment was posted.
    #[error("cancelled: nothing was posted")]
    Post,
}
