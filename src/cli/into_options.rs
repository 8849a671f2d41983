//! The plain options of commands that need no settings, made from their arguments here:
//! the index and the citation checker know no command line.

use std::path::PathBuf;

use super::{DirectionArg, IndexBuildArgs, IndexCommand, IndexNeighborsArgs, VerifyCitationsArgs};
use crate::citation::command::VerifyOptions;
use crate::index::command::{BuildOptions, GraphChoice, IndexAction, NeighborsOptions, PROJECT_GRAPH};
use crate::index::{Direction, IndexError};

impl TryFrom<IndexCommand> for IndexAction {
    type Error = IndexError;

    fn try_from(command: IndexCommand) -> Result<Self, IndexError> {
        Ok(match command {
            IndexCommand::Build(args) => IndexAction::Build(args.into()),
            IndexCommand::Neighbors(args) => IndexAction::Neighbors(args.try_into()?),
        })
    }
}

impl From<IndexBuildArgs> for BuildOptions {
    fn from(args: IndexBuildArgs) -> Self {
        BuildOptions {
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            json: args.json,
        }
    }
}

impl TryFrom<IndexNeighborsArgs> for NeighborsOptions {
    type Error = IndexError;

    /// `--graph` other than `project` is an error.
    fn try_from(args: IndexNeighborsArgs) -> Result<Self, IndexError> {
        let graph = match args.graph_file {
            Some(file) => GraphChoice::File(file),
            None if args.graph == PROJECT_GRAPH => GraphChoice::Project,
            None => return Err(IndexError::UnknownGraph(args.graph)),
        };
        Ok(NeighborsOptions {
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            node: args.node,
            direction: match args.direction {
                DirectionArg::In => Direction::In,
                DirectionArg::Out => Direction::Out,
                DirectionArg::Both => Direction::Both,
            },
            depth: args.depth,
            graph,
            edge_type: args.edge_type,
            json: args.json,
        })
    }
}

impl From<VerifyCitationsArgs> for VerifyOptions {
    fn from(args: VerifyCitationsArgs) -> Self {
        VerifyOptions {
            file: args.file,
            root: args.root.unwrap_or_else(|| PathBuf::from(".")),
            strict: args.strict,
            json: args.json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_graph_name_is_an_error() {
        let args = IndexNeighborsArgs {
            node: "a.ts".into(),
            direction: DirectionArg::In,
            depth: 1,
            graph: "ssot".into(),
            graph_file: None,
            edge_type: None,
            root: None,
            json: false,
        };
        let err = NeighborsOptions::try_from(args).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown graph `ssot`: use `project` (this project's index) or --graph-file FILE"
        );
    }
}
