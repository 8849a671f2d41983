//! Batching tests, on the multi-file seed's examples.

use super::*;
use proptest::prelude::*;

fn candidate(content_type: ContentType, lines: usize) -> BatchCandidate {
    BatchCandidate { content_type, lines }
}

#[test]
fn the_seeds_example_batches_by_type() {
    // utils.py, config.json, schema.json, README.md, requirements.txt, Makefile.
    let files = [
        candidate(ContentType::SourceCode, 400),
        candidate(ContentType::Json, 250),
        candidate(ContentType::Json, 180),
        candidate(ContentType::Prose, 300),
        candidate(ContentType::Config, 50),
        candidate(ContentType::Config, 120),
    ];
    assert_eq!(
        batch_small(&files, 1500),
        vec![vec![0], vec![1, 2], vec![3], vec![4, 5]]
    );
}

#[test]
fn batches_fill_smallest_first_and_oversize_files_stand_alone() {
    let files = [
        candidate(ContentType::SourceCode, 800),
        candidate(ContentType::SourceCode, 50),
        candidate(ContentType::SourceCode, 500),
        candidate(ContentType::SourceCode, 2000),
        candidate(ContentType::SourceCode, 100),
        candidate(ContentType::SourceCode, 400),
    ];
    // Sorted: 50, 100, 400, 500 (=1050), then 800 would make 1850; 2000 alone.
    assert_eq!(batch_small(&files, 1500), vec![vec![1, 2, 4, 5], vec![0], vec![3]]);
    assert!(batch_small(&[], 1500).is_empty());
}

proptest! {
    #[test]
    fn batches_partition_the_files_within_the_limit(
        files in prop::collection::vec((0usize..4, 0usize..2000), 0..40),
        max in 1usize..3000,
    ) {
        let types = [ContentType::SourceCode, ContentType::Json, ContentType::Config, ContentType::Log];
        let files: Vec<BatchCandidate> = files.iter().map(|&(t, lines)| candidate(types[t], lines)).collect();
        let batches = batch_small(&files, max);
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        seen.sort_unstable();
        prop_assert_eq!(seen, (0..files.len()).collect::<Vec<_>>());
        for batch in &batches {
            let total: usize = batch.iter().map(|&i| files[i].lines).sum();
            prop_assert!(batch.len() == 1 || total <= max);
            prop_assert!(batch.iter().all(|&i| files[i].content_type == files[batch[0]].content_type));
        }
        prop_assert_eq!(batch_small(&files, max), batches);
    }
}
