//! Blocking work spread over a few threads, in order: hashing thousands of inputs, reading
//! thousands of cache entries and writing thousands of result files is what a fully cached
//! rerun spends its time on, and it is file-system bound, so a few more threads than cores
//! help.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Threads for file-system-bound work.
pub fn io_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZero::get)
        .clamp(1, 8)
}

/// `f` over every item, on up to `threads` threads, results in the items' order. A thread
/// that panics yields `None` for each of its items instead of losing them.
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<Option<R>> {
    map_from(items, threads, 64, f)
}

/// [`map`], on threads only from `min_items` items on (below that, starting threads costs
/// more than it saves, unless each item is heavy).
fn map_from<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    min_items: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    // Sized once: grown by doubling, the results of 100,000 items were twice their size.
    let mut all = Vec::with_capacity(items.len());
    each_in_order(items, threads, min_items, f, |r| all.push(r));
    all
}

/// `f` over every item on up to `threads` threads, each result handed to `take` on the
/// calling thread, in the items' order, as soon as it and every result before it are
/// ready: what is done with the results overlaps the work on the rest (a fully cached
/// rerun records each answer while the next ones are being written). A thread that panics
/// yields `None` for each of its items instead of losing them.
pub fn each_in_order<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    min_items: usize,
    f: impl Fn(&T) -> R + Sync,
    mut take: impl FnMut(Option<R>),
) {
    if items.len() < min_items.max(2) || threads <= 1 {
        for item in items {
            take(Some(f(item)));
        }
        return;
    }
    // Handed out a block at a time, as threads come for more: items are not equally heavy
    // (a few large files among thousands of small ones), and a fixed share per thread left
    // one thread with all of them while the other waited.
    let blocks: Vec<&[T]> = items.chunks(block_len(items.len(), threads)).collect();
    let done = Blocks {
        slots: Mutex::new(blocks.iter().map(|_| Block::Pending).collect()),
        ready: Condvar::new(),
    };
    let next = AtomicUsize::new(0);
    let (f, done, blocks, next) = (&f, &done, &blocks, &next);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(blocks.len()))
            .map(|_| {
                scope.spawn(move || loop {
                    let at = next.fetch_add(1, Ordering::Relaxed);
                    let Some(block) = blocks.get(at) else { break };
                    // A panic in `f` marks the block lost as it unwinds, so the calling
                    // thread does not wait for it for ever.
                    let mut lost = LostOnPanic { done, at, armed: true };
                    let results: Vec<R> = block.iter().map(f).collect();
                    lost.armed = false;
                    done.set(at, Block::Done(results));
                })
            })
            .collect();
        for (at, block) in blocks.iter().enumerate() {
            match done.take(at) {
                Block::Done(results) => {
                    for r in results {
                        take(Some(r));
                    }
                }
                _ => {
                    for _ in *block {
                        take(None);
                    }
                }
            }
        }
        // Joined here, so a thread that panicked costs its block, not the whole scope.
        for worker in workers {
            let _ = worker.join();
        }
    });
}

/// A block of [`each_in_order`]'s items: not done yet, its results, or lost to a panic.
enum Block<R> {
    Pending,
    Done(Vec<R>),
    Lost,
}

/// The blocks' results, and the calling thread woken as each comes.
struct Blocks<R> {
    slots: Mutex<Vec<Block<R>>>,
    ready: Condvar,
}

impl<R> Blocks<R> {
    fn set(&self, at: usize, block: Block<R>) {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)[at] = block;
        self.ready.notify_all();
    }

    /// Waits until block `at` is done or lost, and takes it.
    fn take(&self, at: usize) -> Block<R> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        while matches!(slots[at], Block::Pending) {
            slots = self.ready.wait(slots).unwrap_or_else(PoisonError::into_inner);
        }
        std::mem::replace(&mut slots[at], Block::Lost)
    }
}

/// Marks its block lost when dropped armed (by a panic's unwinding).
struct LostOnPanic<'a, R> {
    done: &'a Blocks<R>,
    at: usize,
    armed: bool,
}

impl<R> Drop for LostOnPanic<'_, R> {
    fn drop(&mut self) {
        if self.armed {
            self.done.set(self.at, Block::Lost);
        }
    }
}

/// How many items a thread takes at a time: about eight blocks a thread, so the last
/// blocks even out what the first ones did not.
fn block_len(items: usize, threads: usize) -> usize {
    items.div_ceil(threads * 8).max(1)
}

/// Threads for CPU-bound work (rendering and hashing thousands of units).
pub fn cpu_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, 8)
}

/// [`map`] over CPU-bound work that has no side effects: an item whose thread panicked is
/// done again on the calling thread, so the panic surfaces there, as it would have without
/// threads.
pub fn map_pure<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_pure_from(items, 64, f)
}

/// [`map_pure`] over items heavy enough to share out from `min_items` on (cutting files
/// into chunks: a few large files).
pub fn map_pure_from<T: Sync, R: Send>(items: &[T], min_items: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_from(items, cpu_threads(), min_items, &f)
        .into_iter()
        .zip(items)
        .map(|(r, item)| r.unwrap_or_else(|| f(item)))
        .collect()
}

/// `f` on every item in place, on up to [`cpu_threads`] threads, from `min_items` items on:
/// no vector of results besides the items (sizing a million planned units this way holds
/// nothing more than the units). A panic on a thread surfaces on the calling thread.
pub fn for_each_mut<T: Send>(items: &mut [T], min_items: usize, f: impl Fn(&mut T) + Sync) {
    let threads = cpu_threads();
    if items.len() < min_items.max(2) || threads <= 1 {
        items.iter_mut().for_each(f);
        return;
    }
    // Handed out a block at a time (see `map_from`).
    let len = block_len(items.len(), threads);
    let blocks = Mutex::new(items.chunks_mut(len));
    let (f, blocks) = (&f, &blocks);
    // A scope whose thread panicked panics itself once every thread is joined.
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(move || loop {
                let Some(block) = blocks.lock().unwrap_or_else(PoisonError::into_inner).next() else {
                    break;
                };
                block.iter_mut().for_each(f);
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_each_mut_reaches_every_item_once_in_place() {
        let mut items: Vec<u64> = (0..1000).collect();
        for_each_mut(&mut items, 64, |i| *i = *i * 3 + 1);
        assert!(items.iter().enumerate().all(|(n, &i)| i == n as u64 * 3 + 1));
        let mut few = vec![1u64, 2];
        for_each_mut(&mut few, 64, |i| *i += 1);
        assert_eq!(few, [2, 3]);
    }

    #[test]
    fn keeps_order_and_survives_a_panicking_thread() {
        let items: Vec<u32> = (0..200).collect();
        let out = map(&items, 4, |i| i * 2);
        assert_eq!(
            out.iter().map(|o| o.unwrap()).collect::<Vec<_>>(),
            items.iter().map(|i| i * 2).collect::<Vec<_>>()
        );
        let out = map(&items, 4, |i| if *i == 10 { panic!("boom") } else { *i });
        // Blocks of 7 (200 items, 4 threads, 8 blocks each): the one with the panic.
        assert!(
            out[7..14].iter().all(Option::is_none),
            "the block with the panic is lost as None"
        );
        assert!(out[..7].iter().chain(&out[14..]).all(Option::is_some));
    }

    #[test]
    fn each_result_is_taken_in_order_while_later_items_are_still_being_worked_on() {
        let items: Vec<u32> = (0..400).collect();
        let (worked, first_taken) = (AtomicUsize::new(0), std::sync::atomic::AtomicBool::new(false));
        let (mut taken, mut ahead) = (Vec::new(), Vec::new());
        each_in_order(
            &items,
            2,
            64,
            |i| {
                // The last block waits (a while at most) for the first result to be taken.
                let waiting = std::time::Instant::now();
                while *i >= 375 && !first_taken.load(Ordering::SeqCst) && waiting.elapsed().as_secs() < 5 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                worked.fetch_add(1, Ordering::SeqCst);
                i * 2
            },
            |r| {
                first_taken.store(true, Ordering::SeqCst);
                taken.push(r);
                ahead.push(worked.load(Ordering::SeqCst));
            },
        );
        assert_eq!(taken, items.iter().map(|i| Some(i * 2)).collect::<Vec<_>>());
        // The first result was taken before the last item was worked on.
        assert!(
            ahead[0] < items.len(),
            "the first result waited for every item: {}",
            ahead[0]
        );
        // A panic loses its block as `None`, in its place; nothing waits for it for ever.
        let mut taken = Vec::new();
        each_in_order(
            &items,
            2,
            64,
            |i| if *i == 30 { panic!("boom") } else { *i },
            |r| taken.push(r),
        );
        // Blocks of 25 (400 items, 2 threads, 8 blocks each): the second one is lost.
        assert!(taken[25..50].iter().all(Option::is_none));
        assert!(taken[..25].iter().chain(&taken[50..]).all(Option::is_some));
        assert_eq!(taken.len(), items.len());
    }

    #[test]
    fn pure_work_keeps_order_and_redoes_nothing_that_succeeded() {
        let items: Vec<u32> = (0..500).collect();
        assert_eq!(map_pure(&items, |i| i + 1), (1..501).collect::<Vec<_>>());
        let few: Vec<u32> = (0..5).collect();
        assert_eq!(map_pure_from(&few, 2, |i| i * 3), [0, 3, 6, 9, 12]);
        assert_eq!(map_pure_from(&[7u32], 2, |i| i + 1), [8]);
    }
}
