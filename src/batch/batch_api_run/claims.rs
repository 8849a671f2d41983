//! Claims, before a submission (issue 24): a request goes into a batch only once this run
//! holds its cache key, so two runs at once — two `--batch-api` runs, a realtime one and a
//! batch one, any output directories — never pay for one answer twice.
//!
//! Each key is claimed the one way every path claims a key for a submission
//! ([`claim_for_submission`]: in the store, then the realtime calls' flocks looked at, then
//! the cache read again).
//!
//! A key another run holds is
//! - waited for while that run's rlm lives (a realtime call in flight, or its batch): its
//!   answer is read from the cache when it lands, and nothing is paid here;
//! - collected here when that run's rlm is gone and its batch is at this server: the batch
//!   is polled and its results kept as this run's own (their cost reported here, once);
//! - otherwise left not run, saying which run to resume.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::host::{Host, Request};
use super::phase::Phase;
use super::wait::Waiting;
use super::BatchApiRun;
use crate::batch::execution::Pause;
use crate::batch::key_claim::{claim_for_submission, ForSubmission, CLAIM_CHUNK};
use crate::cache::CacheEntry;
use crate::exec::Event;
use crate::provider::batch_api::BatchCounts;
use crate::store::{KeyHolder, RunId};

/// The longest wait between two looks at keys other runs hold.
const LONGEST_LOOK: Duration = Duration::from_secs(5);

impl BatchApiRun {
    /// Of `send`, the requests this run may submit now, each key claimed for it; the others
    /// are served from the cache, waited for (`p.awaiting`), collected from a dead run's
    /// batch, or left not run (see the module doc).
    pub(super) async fn claim<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        send: Vec<usize>,
    ) -> Vec<usize> {
        let Some((cache, max_tokens)) = exec.claims().filter(|_| !send.is_empty()) else {
            // `--no-cache`: this run wants its own answers.
            return send;
        };
        let mut mine = Vec::with_capacity(send.len());
        let mut orphaned: BTreeMap<String, (RunId, Vec<usize>)> = BTreeMap::new();
        for chunk in send.chunks(CLAIM_CHUNK) {
            let keys: Vec<String> = chunk.iter().map(|&i| p.keys[i].clone()).collect();
            let mut failed = None;
            let verdicts = claim_for_submission(
                &mut self.store,
                &self.run,
                self.api.server(),
                (&cache, max_tokens),
                &keys,
                &mut |e| failed = Some(e),
            )
            .await;
            if let Some(e) = failed {
                self.store_write(|_, _| Err(e));
            }
            let mut let_go = Vec::new();
            for (&i, verdict) in chunk.iter().zip(verdicts) {
                match verdict {
                    ForSubmission::Mine => mine.push(i),
                    // Being paid for now: its answer is read from the cache when it lands.
                    ForSubmission::Running => {
                        p.awaiting.push(i);
                        let_go.push(i);
                    }
                    ForSubmission::Cached(entry) => {
                        self.serve(exec, p, i, entry).await;
                        let_go.push(i);
                    }
                    ForSubmission::Held(holder) => self.held_elsewhere(exec, p, i, holder, &mut orphaned),
                }
            }
            if !let_go.is_empty() {
                let keys: Vec<&str> = let_go.iter().map(|&i| p.keys[i].as_str()).collect();
                self.store_write(|s, run| s.release_claims(run, &keys));
            }
        }
        for (batch_id, (owner, indexes)) in orphaned {
            self.collect_for(exec, p, batch_id, owner, indexes);
        }
        mine
    }

    /// Request `i`'s key is held by another run's batch (see the module doc).
    fn held_elsewhere<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        i: usize,
        holder: KeyHolder,
        orphaned: &mut BTreeMap<String, (RunId, Vec<usize>)>,
    ) {
        match &holder.batch_id {
            _ if holder.alive => p.awaiting.push(i),
            Some(batch_id) if holder.server == self.api.server() => {
                orphaned
                    .entry(batch_id.clone())
                    .or_insert_with(|| (holder.run.clone(), Vec::new()))
                    .1
                    .push(i);
            }
            _ => self.cancelled(exec, p, i, &format!("not run: its answer is {}", holder.describe())),
        }
    }

    /// Waits for batch `batch_id` of run `owner`, whose rlm is gone, and collects it as this
    /// run's own for the requests `indexes` (its claims tell which of its custom ids they
    /// are): their answers are paid for there, never again here.
    fn collect_for<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        batch_id: String,
        owner: RunId,
        indexes: Vec<usize>,
    ) {
        let claims = match self.store.batch_claims(&batch_id) {
            Ok(claims) => claims,
            Err(e) => {
                for i in indexes {
                    self.cancelled(
                        exec,
                        p,
                        i,
                        &format!(
                            "not run: its answer is in batch {batch_id} of run {owner}, which cannot be read ({e})"
                        ),
                    );
                }
                return;
            }
        };
        let wanted: std::collections::HashMap<String, usize> =
            indexes.iter().map(|&i| (p.keys[i].clone(), i)).collect();
        let mut custom_ids = Vec::new();
        let mut whole = true;
        for (custom_id, key) in &claims {
            match wanted.get(key.as_str()) {
                Some(&i) if !p.done[i] && !p.in_flight[i] => {
                    p.in_flight[i] = true;
                    p.track(custom_id, i);
                    custom_ids.push(custom_id.clone());
                }
                _ => whole = false,
            }
        }
        // A request whose claim names no custom id in that batch cannot be told from its
        // results: not run (and not paid again); the owner's resume collects it.
        for &i in &indexes {
            if !p.in_flight[i] && !p.done[i] {
                self.cancelled(
                    exec,
                    p,
                    i,
                    &format!(
                        "not run: its answer is in batch {batch_id} of run {owner}: `rlm resume {owner}` collects it"
                    ),
                );
            }
        }
        if custom_ids.is_empty() {
            return;
        }
        exec.emit(Event::Warning {
            message: format!(
                "{} requests are in batch {batch_id} of run {owner}, whose rlm is gone: this run collects it, so they \
                 are not paid again",
                custom_ids.len()
            ),
        });
        let now = Instant::now();
        p.batches.push(Waiting {
            batch_id,
            custom_ids,
            polls: 0,
            next_poll: now,
            submitted: now,
            counts: BatchCounts::default(),
            cancel_requested: false,
            owner: Some((owner, whole)),
        });
    }

    /// Keys other runs hold, looked at again: those answered are served, those let go are
    /// this run's to submit (returned), those of a run now gone are collected here.
    pub(super) async fn look_again<W: Request, H: Host<W>>(&mut self, exec: &mut H, p: &mut Phase<W>) -> Vec<usize> {
        let waiting = std::mem::take(&mut p.awaiting);
        self.claim(exec, p, waiting).await
    }

    /// Waits until some key other runs hold changes hands (see [`BatchApiRun::look_again`]),
    /// or until Ctrl-C or the deadline: then what still waits is not run. Returns the
    /// requests to submit; `None` when the wait was stopped.
    pub(super) async fn wait_for_others<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
    ) -> Option<Vec<usize>> {
        let mut looks = 0;
        while !p.awaiting.is_empty() && p.batches.is_empty() {
            let delay = self.schedule.delay(looks).min(LONGEST_LOOK);
            looks += 1;
            if exec.pause(Instant::now() + delay).await != Pause::Elapsed {
                let reason = format!(
                    "not run: {} before another run's answer to the same request came (`{}` reads it from the \
                     cache)",
                    exec.why_stopped(),
                    self.resume
                );
                for i in std::mem::take(&mut p.awaiting) {
                    self.cancelled(exec, p, i, &reason);
                }
                return None;
            }
            let send = self.look_again(exec, p).await;
            if !send.is_empty() {
                return Some(send);
            }
        }
        Some(Vec::new())
    }

    /// Request `i`, answered by another run meanwhile: served from the cache, as a hit.
    async fn serve<W: Request, H: Host<W>>(
        &mut self,
        exec: &mut H,
        p: &mut Phase<W>,
        i: usize,
        entry: Box<CacheEntry>,
    ) {
        if !std::mem::replace(&mut p.done[i], true) {
            exec.serve(p.work[i], entry).await;
        }
    }
}
