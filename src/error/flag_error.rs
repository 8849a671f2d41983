//! `FlagError`: a flag's value cannot be used. The flag is named; the error of what parsed
//! or resolved the value is kept as the source.

use crate::index::IndexError;

/// A flag's value is wrong (exit 2): the command line must change.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// The value of `flag` was refused by what reads it.
    #[error("{flag}: {source}")]
    Invalid {
        flag: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `--graph` or `--neighbors-of` names a graph or node the index does not know.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// `rlm man SUBCOMMAND` names no subcommand.
    #[error(transparent)]
    UnknownSubcommand(#[from] crate::man_page::UnknownSubcommand),
}

impl FlagError {
    /// The value of `flag` was refused: `source` says why.
    pub fn invalid<E: std::error::Error + Send + Sync + 'static>(
        flag: impl Into<String>,
    ) -> impl FnOnce(E) -> FlagError {
        let flag = flag.into();
        move |source| FlagError::Invalid {
            flag,
            source: Box::new(source),
        }
    }
}
