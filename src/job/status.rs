//! `rlm job list` and `rlm job status`: what the job directories' `job.json` say, newest
//! first, or of one job per phase (batches, items, cost, and an ETA while an rlm works on it).

use serde_json::json;

use super::job_dir::{self, JobDir};
use super::runner;
use super::state::{self, JobStatus, PhaseState};
use super::PhaseKind;
use crate::error::{ExitStatus, RlmError};
use crate::money::usd;
use crate::printer::Printer;
use crate::settings::Environment;
use crate::store::Timestamp;

/// `rlm job list [--json]`: newest first.
pub(super) fn list(as_json: bool, env: &Environment) -> Result<ExitStatus, RlmError> {
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for id in job_dir::list_ids(&env.cwd)?.into_iter().rev() {
        let dir = JobDir::open(&env.cwd, Some(&id))?;
        match dir.read_record() {
            Ok(r) => rows.push(json!({
                "job_id": r.job_id, "name": r.name, "kind": r.kind, "status": r.status.name(),
                "created_at": r.created_at, "updated_at": r.updated_at, "items": r.items,
                "phases_done": r.phases.iter().filter(|p| p.status().is_done()).count(),
                "phases": r.phases.len(), "unprocessed": r.unprocessed(), "cost_usd": r.cost_usd(),
                "dir": dir.root.display().to_string(),
            })),
            Err(e) => {
                unreadable += 1;
                Printer::plain().warn(&format!("{id}: {e}"));
            }
        }
    }
    let text = if as_json {
        serde_json::to_string_pretty(&rows).unwrap_or_default()
    } else if rows.is_empty() && unreadable > 0 {
        match unreadable {
            1 => "No job can be read: the one job's job.json is not readable (named above)".to_string(),
            n => format!("No job can be read: the job.json of each of the {n} jobs is not readable (named above)"),
        }
    } else if rows.is_empty() {
        "No jobs yet: rlm job run JOB.toml or rlm job pr-review OWNER/REPO --vision VISION.md".to_string()
    } else {
        let mut s = format!(
            "{:<26} {:<18} {:>7} {:>7} {:>10}  NAME\n",
            "JOB", "STATUS", "ITEMS", "PHASES", "COST"
        );
        for r in &rows {
            s.push_str(&format!(
                "{:<26} {:<18} {:>7} {:>7} {:>10}  {}\n",
                r["job_id"].as_str().unwrap_or(""),
                r["status"].as_str().unwrap_or(""),
                r["items"].to_string(),
                format!("{}/{}", r["phases_done"], r["phases"]),
                usd(r["cost_usd"].as_f64().unwrap_or(0.0)),
                r["name"].as_str().unwrap_or("")
            ));
        }
        s.trim_end().to_string()
    };
    Printer::plain().data(&text);
    Ok(ExitStatus::Success)
}

/// `rlm job status [JOB] [--json]`: per phase, batches done/failed/total, items, cost, ETA.
pub(super) fn status(query: Option<&str>, as_json: bool, env: &Environment) -> Result<ExitStatus, RlmError> {
    let dir = JobDir::open(&env.cwd, query)?;
    let record = dir.read_record()?;
    let owner_gone = record.status == JobStatus::Running && owner_gone(env, &record.job_id);
    // Only a job an rlm works on now has an ETA: nobody works on one whose owner is gone,
    // or that stopped (Ctrl-C, --deadline, --max-cost, --pause-after) in a phase.
    let working = record.status == JobStatus::Running && !owner_gone;
    let etas: Vec<Option<u64>> = record
        .phases
        .iter()
        .map(|p| if working { eta_secs(p) } else { None })
        .collect();
    if as_json {
        let mut doc = runner::summary_json(&dir, &record);
        doc["owner_gone"] = json!(owner_gone);
        doc["eta_seconds"] = json!(etas);
        Printer::plain().json(&doc);
        return Ok(ExitStatus::Success);
    }
    let r = &record;
    let shown = if owner_gone {
        "RUNNING, but no rlm is working on it (it crashed or was killed): rlm job resume goes on".to_string()
    } else {
        r.status.name().to_string()
    };
    let mut s = format!(
        "Job {} · {} · {}\nStatus: {shown}\nItems: {} · Cost: {} · Directory: {}\n",
        r.job_id,
        r.name,
        r.kind,
        r.items,
        usd(r.cost_usd()),
        dir.root.display()
    );
    if r.earlier.calls > 0 || r.earlier.cost_usd > 0.0 {
        // The phases below show their latest run; the job's cost holds every run.
        s.push_str(&format!(
            "Earlier: {} and {} in runs a rerun replaced\n",
            usd(r.earlier.cost_usd),
            crate::printer::plural(r.earlier.calls as usize, "call")
        ));
    }
    if let Some(why) = &r.stopped {
        s.push_str(&format!("Stopped: {why}\n"));
    }
    for (i, (p, eta)) in r.phases.iter().zip(&etas).enumerate() {
        let kind = p.kind.map_or("", PhaseKind::name);
        let eta = eta.map_or(String::new(), |e| format!(" · ETA ~{e}s"));
        s.push_str(&format!(
            "  {} {:<18} {:<7} {:<9} batches {}/{} ({} failed) · items {}/{} · {}{eta}\n",
            i + 1,
            p.name,
            kind,
            // A phase the job stopped in is not running: `resume` takes it up.
            match p.status() {
                state::PhaseStatus::Running if !working => "stopped".to_string(),
                status => format!("{status:?}").to_lowercase(),
            },
            p.batches_done,
            p.batches_total,
            p.batches_failed,
            p.items_done,
            p.items_total,
            usd(p.cost_usd)
        ));
        for note in &p.notes {
            s.push_str(&format!("      {note}\n"));
        }
    }
    if r.unprocessed() > 0 {
        s.push_str(&format!(
            "Unprocessed: {} (rlm job rerun {} --phase N takes only them)\n",
            crate::printer::plural(r.unprocessed(), "item"),
            r.job_id
        ));
    }
    Printer::plain().data(s.trim_end());
    Ok(ExitStatus::Success)
}

/// A running phase's ETA: its pace so far over the batches left.
fn eta_secs(p: &PhaseState) -> Option<u64> {
    if p.status() != state::PhaseStatus::Running || p.batches_done == 0 {
        return None;
    }
    let started = p.started_at.as_deref().and_then(Timestamp::parse)?;
    let elapsed = Timestamp::now().since(started).as_secs();
    let left = p.batches_total.saturating_sub(p.batches_done + p.batches_failed) as u64;
    Some(left * elapsed / p.batches_done as u64)
}

/// Whether the store says the job's owner is gone.
fn owner_gone(env: &Environment, id: &str) -> bool {
    let rlm_dir = env.cwd.join(".aiwg").join("rlm");
    crate::store::TaskStore::open(&rlm_dir)
        .and_then(|s| s.run(&crate::store::RunId::from(id)))
        .is_ok_and(|run| run.crashed())
}
