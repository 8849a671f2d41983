//! A full disk under the cache, for real (issue 17): the cache directory is a small tmpfs
//! mounted in a mount namespace of its own (`unshare`, with a user namespace so no root is
//! needed where unprivileged namespaces are allowed), and rlm runs inside it (`nsenter`), so
//! its writes meet a true `ENOSPC` — not a broken directory, which fails differently.
//!
//! Where no namespace can be made, the tests fail saying why, unless
//! `RLM_FULL_DISK_TEST=skip` asks to skip them: then they say loudly that they skipped.
#![cfg(target_os = "linux")]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::mock_llm::*;
use crate::support::*;
use serde_json::Value;

/// A tmpfs of a given size mounted on one directory, seen only by the processes run through
/// [`SmallDisk::enter`]; it goes away with the namespace when dropped.
struct SmallDisk {
    /// `sleep`, holding the namespaces open.
    holder: Child,
    mount_point: PathBuf,
}

impl SmallDisk {
    /// Mounts a `kib` KiB tmpfs on `dir` (created if missing) in new user and mount
    /// namespaces; `Err` says why that cannot be done here.
    fn mount(dir: &Path, kib: u64) -> Result<SmallDisk, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut holder = Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "--propagation",
                "private",
                "sleep",
                "3600",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run unshare: {e}"))?;
        // The namespaces exist once unshare has become `sleep` (its mount namespace differs).
        let ours = std::fs::read_link("/proc/self/ns/mnt").map_err(|e| e.to_string())?;
        let pid = holder.id();
        let entered = wait_until(Duration::from_secs(10), || {
            if let Ok(Some(_)) = holder.try_wait() {
                return true;
            }
            std::fs::read_link(format!("/proc/{pid}/ns/mnt")).is_ok_and(|ns| ns != ours)
        });
        if let Ok(Some(status)) = holder.try_wait() {
            let mut why = String::new();
            if let Some(mut err) = holder.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut err, &mut why);
            }
            return Err(format!("unshare --user --mount failed ({status}): {}", why.trim()));
        }
        if !entered {
            let _ = holder.kill();
            return Err("unshare never entered its namespaces".into());
        }
        let disk = SmallDisk {
            holder,
            mount_point: dir.to_path_buf(),
        };
        let size = format!("size={kib}k");
        disk.exec(&["mount", "-t", "tmpfs", "-o", &size, "tmpfs", &dir.display().to_string()])?;
        Ok(disk)
    }

    /// The command that runs a program inside the namespaces, in `cwd` (the program
    /// follows; entering a mount namespace would start it in `/`).
    fn enter(&self, cwd: &Path) -> Vec<String> {
        let pid = self.holder.id().to_string();
        let wd = format!("--wd={}", cwd.display());
        [
            "nsenter",
            "-t",
            &pid,
            "--user",
            "--mount",
            "--preserve-credentials",
            &wd,
            "--",
        ]
        .map(str::to_string)
        .to_vec()
    }

    /// Runs `args` inside the namespaces; its stdout, or why it failed.
    fn exec(&self, args: &[&str]) -> Result<String, String> {
        let enter = self.enter(Path::new("/"));
        let out = Command::new(&enter[0])
            .args(&enter[1..])
            .args(args)
            .output()
            .map_err(|e| format!("cannot run nsenter: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Makes the disk `kib` KiB large (room again).
    fn resize(&self, kib: u64) {
        let options = format!("remount,size={kib}k");
        self.exec(&["mount", "-o", &options, &self.mount_point.display().to_string()])
            .unwrap();
    }

    /// The cache entries on the disk (`results-v1/ab/<key>.json`), as seen inside.
    fn cache_entries(&self) -> usize {
        let listed = self
            .exec(&[
                "find",
                &self.mount_point.display().to_string(),
                "-name",
                "*.json",
                "-type",
                "f",
            ])
            .unwrap();
        listed
            .lines()
            .filter(|l| l.contains("/results-v1/") && !l.contains("/.tmp/"))
            .count()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// A small disk on the project's cache directory, or `None` when the test is to be skipped
/// (`RLM_FULL_DISK_TEST=skip`, said loudly); without that, no disk is a failure.
fn small_cache_disk(p: &Project, kib: u64) -> Option<SmallDisk> {
    match SmallDisk::mount(&p.path().join(".aiwg/rlm/cache"), kib) {
        Ok(disk) => Some(disk),
        Err(why) if std::env::var("RLM_FULL_DISK_TEST").as_deref() == Ok("skip") => {
            eprintln!(
                "\n*** SKIPPED {}: no real full disk can be made here ({why}); RLM_FULL_DISK_TEST=skip ***\n",
                std::thread::current().name().unwrap_or("full_disk")
            );
            None
        }
        Err(why) => panic!(
            "cannot make a real full disk here ({why}): run the tests as root or where unprivileged user \
             namespaces are allowed (unshare --user --mount), or set RLM_FULL_DISK_TEST=skip to skip this test \
             knowingly"
        ),
    }
}

/// How many requests the mock received per file (by the `File:` line of the prompt).
fn requests_per_file(mock: &MockLlm) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for r in mock.recorded() {
        if let Some(path) = r.user_text().lines().next().and_then(|l| l.strip_prefix("File: ")) {
            *counts.entry(path.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

/// The answers kept in a run directory's `pending-cache/`.
fn kept_in(dir: &Path) -> usize {
    files_under(&dir.join("pending-cache"))
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .count()
}

const FILES: usize = 60;
const WIDTH: usize = 4;
/// 32 pages: room for the start's 64 KiB probe, then for about 30 entries of a page each.
const DISK_KIB: u64 = 128;

/// The cache fills up mid-run: dispatching stops at the first answer it cannot take, every
/// answer paid for is either cached or kept in `pending-cache/` (counted in report.json and
/// the store, named with the directory), the report says `rlm resume RUN`, a resume while
/// the disk is still full refuses before paying anything, and once there is room it caches
/// the kept answers and pays only for the rest: each file exactly once.
#[test]
fn a_full_cache_keeps_what_it_cannot_take_and_resume_pays_for_none_of_it_again() {
    let p = Project::new().ts_files(FILES);
    let Some(disk) = small_cache_disk(&p, DISK_KIB) else {
        return;
    };
    let enter = disk.enter(p.path());
    let enter: Vec<&str> = enter.iter().map(String::as_str).collect();
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(30));
    let url = mock.url();
    let width = WIDTH.to_string();
    let args = [
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-o",
        "out",
        "-j",
        &width,
        "--yes",
        "--no-batch-small",
    ];
    let first = p.rlm(&args).via(&enter).run();
    first.assert_exit(1);
    let paid = mock.requests();
    let cached = disk.cache_entries();
    let out = p.path().join("out");
    let kept = kept_in(&out);
    assert!(
        cached >= 1 && kept >= 1 && paid < FILES,
        "{paid} paid, {cached} cached, {kept} kept"
    );
    assert_eq!(paid, cached + kept, "every answer paid for is cached or kept");
    // Once a write failed, no call started: kept are the one that failed, those in flight,
    // and the calls that started between an answer's journal line and its failed cache write
    // (each answer journaled hands its slot back before the disk is tried: on a loaded
    // machine the write waits for the blocking pool while the other in-flight answers come
    // in, each letting one call start). A run that went on dispatching would keep dozens.
    assert!(
        kept <= 2 * WIDTH + 1,
        "{kept} answers kept: calls started after the cache failed\n{}",
        first.stderr
    );
    let report = p.report();
    let id = report["run_id"].as_str().unwrap().to_string();
    assert_eq!(report["status"], "PARTIAL", "{report:#}");
    assert_eq!(report["not_cached"].as_array().unwrap().len(), kept, "{report:#}");
    assert_eq!(report["pending_cache_dir"], "out/pending-cache", "{report:#}");
    let units: Vec<&Value> = report["units"].as_array().unwrap().iter().collect();
    assert_eq!(units.iter().filter(|u| u["not_cached"] == true).count(), kept);
    let said = if kept == 1 {
        "1 answer was paid for but not cached".to_string()
    } else {
        format!("{kept} answers were paid for but not cached")
    };
    // The end of the run says it (in the completion block; on stderr with -q or --json).
    let said_all = format!("{}{}", first.stdout, first.stderr);
    assert!(said_all.contains(&said), "{said_all}");
    assert!(said_all.contains("out/pending-cache/"), "{said_all}");
    assert!(said_all.contains(&format!("rlm resume {id}")), "{said_all}");
    let md = p.read("out/report.md");
    let next = &md[md.find("## Next Steps").unwrap()..];
    assert!(next.contains(&format!("`rlm resume {id}`")), "{next}");
    assert!(!next.contains("Run the same command again"), "{next}");
    assert!(md.contains("## Not Cached"), "{md}");
    let status = p.rlm(&["status", &id, "--json"]).run();
    assert_eq!(status.json()["not_cached"], kept, "{}", status.stdout);
    let text = p.rlm(&["status", &id]).run().stdout;
    assert!(text.contains("uncached"), "{text}");

    // Still full: refused before anything is paid for, the kept answers left as they are.
    let refused = p.rlm(&["resume", "--yes"]).via(&enter).run();
    refused.assert_exit(2);
    // It counts the answers that are kept, not those of the journal the cache holds already.
    let answers = if kept == 1 { "answer" } else { "answers" };
    let counted = format!("the cache cannot take the {kept} {answers} kept in ");
    assert!(refused.stderr.contains(&counted), "{counted}\n{}", refused.stderr);
    assert!(refused.stderr.contains("out/pending-cache"), "{}", refused.stderr);
    assert_eq!(mock.requests(), paid, "nothing was sent");
    assert_eq!(kept_in(&out), kept);

    // Room again: the kept answers go into the cache, only the rest is paid for.
    disk.resize(16 * 1024);
    let resumed = p.rlm(&["resume", "--yes"]).via(&enter).run();
    resumed.assert_exit(0);
    assert_eq!(mock.requests(), FILES, "{}", resumed.stderr);
    let counts = requests_per_file(&mock);
    assert!(counts.values().all(|&n| n == 1), "a file paid for twice: {counts:?}");
    assert_eq!(kept_in(&out), 0);
    assert_eq!(disk.cache_entries(), FILES);
    let report = p.report();
    assert_eq!(report["succeeded"], FILES, "{report:#}");
    assert_eq!(report["not_cached"].as_array().unwrap().len(), 0);
    let status = p.rlm(&["status", &id, "--json"]).run();
    assert_eq!(status.json()["not_cached"], 0, "{}", status.stdout);
}

/// The same full disk without `-o`: following the report's advice later with the same
/// command, in a new run directory, pays nothing for the answers the first run kept.
#[test]
fn a_plain_rerun_takes_the_answers_an_earlier_run_could_not_cache() {
    let p = Project::new().ts_files(FILES);
    let Some(disk) = small_cache_disk(&p, DISK_KIB) else {
        return;
    };
    let enter = disk.enter(p.path());
    let enter: Vec<&str> = enter.iter().map(String::as_str).collect();
    let mock = MockLlm::start();
    mock.set_latency(Duration::from_millis(30));
    let url = mock.url();
    let width = WIDTH.to_string();
    let args = [
        "batch",
        "src/*.ts",
        "List {file}",
        "--base-url",
        &url,
        "--model",
        "haiku",
        "-j",
        &width,
        "--yes",
        "--no-batch-small",
    ];
    p.rlm(&args).via(&enter).run().assert_exit(1);
    let first_dir = p.run_dirs().pop().unwrap();
    let kept = kept_in(&first_dir);
    assert!(kept >= 1, "the cache filled up");
    let paid = mock.requests();

    disk.resize(16 * 1024);
    let rerun = p.rlm(&args).via(&enter).run();
    rerun.assert_exit(0);
    assert_eq!(p.run_dirs().len(), 2, "a new run directory");
    assert_eq!(
        mock.requests(),
        FILES,
        "{paid} paid first, {kept} of them kept: none paid again\n{}",
        rerun.stderr
    );
    assert!(requests_per_file(&mock).values().all(|&n| n == 1));
    assert_eq!(kept_in(&first_dir), 0, "moved into the cache");
    assert_eq!(disk.cache_entries(), FILES);
}

/// The same full disk under `rlm job run --batch-api`: a provider batch's answers that the
/// cache cannot take are kept in the job's batch output files, the job stops at the first
/// one, and its resume (room again) collects the rest of the same provider batch: every
/// request is paid once, none in real time.
#[test]
fn a_full_cache_under_a_batch_job_keeps_each_paid_answer_and_the_resume_pays_none_again() {
    use crate::job::{batch_outputs, fast as job_fast, job_args, job_id, job_project, map_requests, only_job};
    const BATCHES: usize = 60;
    let p = job_project(BATCHES * 2, 2, &[], "");
    let Some(disk) = small_cache_disk(&p, DISK_KIB) else {
        return;
    };
    let enter = disk.enter(p.path());
    let enter: Vec<&str> = enter.iter().map(String::as_str).collect();
    let mock = MockLlm::start();
    mock.set_batch_progress(crate::support::mock_llm::batch::BatchProgress::AfterPolls(0));
    let url = mock.url();
    let first = job_fast(p.rlm(&job_args(&url, &["--batch-api", "--yes"])))
        .via(&enter)
        .run();
    assert_ne!(first.status, 0, "{}", first.stderr);
    assert!(first.stderr.contains("cannot write the cache"), "{}", first.stderr);
    assert_eq!(mock.batch_sizes(), [BATCHES], "{}", first.stderr);
    let dir = only_job(&p);
    let written = batch_outputs(&dir, "classify").len();
    let cached = disk.cache_entries();
    assert!(
        (1..BATCHES).contains(&written) && cached < written + 1,
        "{written} outputs, {cached} cached: {}",
        first.stderr
    );

    disk.resize(16 * 1024);
    let resumed = job_fast(p.rlm(&["job", "resume", &job_id(&dir)])).via(&enter).run();
    resumed.assert_exit(0);
    assert_eq!(
        mock.batch_sizes(),
        [BATCHES],
        "the same provider batch collected again, nothing sent twice: {}",
        resumed.stderr
    );
    assert!(
        map_requests(&mock).is_empty(),
        "nothing paid in real time: {}",
        resumed.stderr
    );
    assert_eq!(batch_outputs(&dir, "classify").len(), BATCHES);
}
