//! Small-file batching (the multi-file seed's section 5): small files of one content type
//! share one analyst call of at most 1500 combined lines. The call's answer is split back
//! into one result per file by [`crate::answer::split_batch_answer`].

use super::content_type::ContentType;

/// One file that may be batched: its content type and line count. Its position in the
/// slice given to [`batch_small`] is its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchCandidate {
    pub content_type: ContentType,
    pub lines: usize,
}

/// Groups `files` into batches: files of the same content type, smallest first, added to a
/// batch until the next would take it over `max_lines` combined lines. A file over
/// `max_lines` on its own, or alone of its type, is a batch of one. Every index appears
/// exactly once; batches come in [`ContentType`] order, then by creation, and list their
/// files in input order — the same input always gives the same batches.
pub fn batch_small(files: &[BatchCandidate], max_lines: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| (files[i].content_type, files[i].lines, i));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut current_lines = 0;
    let mut current_type = None;
    for i in order {
        let f = files[i];
        let fits = current_type == Some(f.content_type) && current_lines + f.lines <= max_lines;
        if !fits && !current.is_empty() {
            batches.push(std::mem::take(&mut current));
            current_lines = 0;
        }
        current.push(i);
        current_lines += f.lines;
        current_type = Some(f.content_type);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    for batch in &mut batches {
        batch.sort_unstable();
    }
    batches
}

#[cfg(test)]
#[path = "small_batch_tests.rs"]
mod tests;
