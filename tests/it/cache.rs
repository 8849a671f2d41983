//! The result cache end to end: reruns are free, changes are re-sent, and `--no-cache` /
//! `--cache-only` do what they say.

use crate::support::mock_llm::*;
use crate::support::*;

const N: usize = 5;

/// `rlm batch src/*.ts "List {file}" --base-url URL EXTRA...`
fn batch<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    crate::support::batch("src/*.ts", url, extra)
}

/// A project whose N files have all been processed once.
fn warmed_up(mock: &MockLlm) -> Project {
    let p = Project::new().ts_files(N);
    p.rlm(&batch(&mock.url(), &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), N);
    assert_eq!(p.report()["cache_misses"], N);
    mock.reset_counts();
    p
}

#[test]
fn rerun_makes_no_calls() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let first_dir = p.out_dir();
    let first_aggregate = p.aggregate_md();
    let url = mock.url();
    let out = p.rlm(&batch(&url, &[])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert!(
        out.stderr.contains(&format!("Cache: {N} hits, 0 misses")),
        "{}",
        out.stderr
    );

    // A new run directory, with the same results written again.
    let second_dir = p.out_dir();
    assert_ne!(first_dir, second_dir);
    assert_eq!(p.run_dirs().len(), 2);
    for name in file_names(&first_dir).iter().filter(|n| n.ends_with(".result.md")) {
        assert_eq!(
            std::fs::read_to_string(first_dir.join(name)).unwrap(),
            std::fs::read_to_string(second_dir.join(name)).unwrap()
        );
    }
    let strip_timestamp = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("Timestamp: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip_timestamp(&p.aggregate_md()), strip_timestamp(&first_aggregate));

    let report = p.report();
    assert_eq!(report["status"], "SUCCESS");
    assert_eq!(report["cache_hits"], N);
    assert_eq!(report["cache_misses"], 0);
    assert_eq!(report["tokens_in"], 0);
    assert_eq!(report["tokens_out"], 0);
    assert_eq!(report["cost_usd"], 0.0);
    let saved = report["tokens_saved"].as_u64().unwrap();
    assert!(saved > 0);
    let per_unit: u64 = report["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            assert_eq!(u["cached"], true);
            assert_eq!(u["attempts"], 0);
            u["tokens_saved"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(saved, per_unit);
}

#[test]
fn a_changed_file_is_sent_again() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    p.write("src/f03.ts", "export const f03 = 'changed';\n");
    let url = mock.url();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 1);
    assert!(mock.recorded()[0].user_text().contains("export const f03 = 'changed';"));
    let report = p.report();
    assert_eq!(report["cache_hits"], N - 1);
    assert_eq!(report["cache_misses"], 1);

    // A new file is a miss too, and a different sub-prompt misses everything.
    mock.reset_counts();
    p.write("src/new.ts", "export const added = true;\n");
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 1);
    mock.reset_counts();
    p.rlm(&[
        "batch",
        "src/*.ts",
        "Count the lines of {file}",
        "--base-url",
        &url,
        "--no-batch-small",
    ])
    .run()
    .assert_exit(0);
    assert_eq!(mock.requests(), N + 1);
}

#[test]
fn no_cache_sends_everything_and_refreshes_the_cache() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let url = mock.url();
    p.rlm(&batch(&url, &["--no-cache"])).run().assert_exit(0);
    assert_eq!(mock.requests(), N);
    let report = p.report();
    assert_eq!(report["cache_hits"], 0);
    assert_eq!(report["cache_misses"], N);
    mock.reset_counts();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
}

#[test]
fn cache_only_lists_misses_and_calls_nothing() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let url = mock.url();
    let out = p.rlm(&batch(&url, &["--cache-only"])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.report()["cache_hits"], N);
    let runs_before = p.run_dirs().len();

    p.write("src/f01.ts", "export const f01 = 'changed';\n");
    let out = p.rlm(&batch(&url, &["--cache-only"])).run();
    out.assert_exit(2);
    assert_eq!(mock.requests(), 0);
    assert!(
        out.stderr.contains("--cache-only: 1 of 5 inputs would miss the cache"),
        "{}",
        out.stderr
    );
    let listed: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("  src/")).collect();
    assert_eq!(listed.len(), 1, "{}", out.stderr);
    assert!(listed[0].starts_with("  src/f01.ts (key "), "{}", listed[0]);
    assert_eq!(
        p.run_dirs().len(),
        runs_before,
        "a failed --cache-only run writes nothing"
    );
}

#[test]
fn cache_is_keyed_by_model_but_per_file_answers_not_by_aggregate() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let url = mock.url();
    p.rlm(&batch(&url, &["--model", "haiku"])).run().assert_exit(0);
    assert_eq!(mock.requests(), N, "another model is another answer");
    mock.reset_counts();
    // Per-file answers do not depend on how they are combined: trying another strategy is free.
    p.rlm(&batch(&url, &["--aggregate", "merge"])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0, "merge reuses the concat run's answers");
    p.rlm(&batch(&url, &["--aggregate", "summarize"])).run().assert_exit(0);
    assert_eq!(mock.requests(), 1, "summarize pays only for its summary");
}

#[test]
fn corrupt_cache_entries_are_misses() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let entries: Vec<_> = p
        .all_files()
        .into_iter()
        .filter(|f| f.to_string_lossy().contains("/.aiwg/rlm/cache/results-v1/"))
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(entries.len(), N);
    std::fs::write(&entries[0], b"{ not json").unwrap();
    let url = mock.url();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 1);
    mock.reset_counts();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0, "the corrupt entry was replaced");
}

#[test]
fn cache_only_summarize_uses_a_cached_summary_and_never_calls_for_a_missing_one() {
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let url = mock.url();
    let summarize = |extra: &[&'static str]| {
        let mut args = vec!["--aggregate", "summarize"];
        args.extend_from_slice(extra);
        args
    };

    // The per-file answers are cached (by the concat run), the summary is not: --cache-only
    // leaves the concatenation and exits 1, calling nothing.
    let out = p.rlm(&batch(&url, &summarize(&["--cache-only"]))).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.report()["cache_hits"], N);

    // A summarize run whose summary call keeps failing (500 on every attempt): the results
    // are cached, the summary is not.
    mock.fault_when("synthesizer of an rlm batch run", vec![Fault::ServerError; 4]);
    p.rlm(&batch(&url, &summarize(&["--retries", "3"])))
        .run()
        .assert_exit(1);
    assert_eq!(mock.pending_faults(), 0);
    mock.reset_counts();

    // --cache-only: the missing summary is not called for; aggregate.md is the concatenation.
    let out = p.rlm(&batch(&url, &summarize(&["--cache-only"]))).run();
    out.assert_exit(1);
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.report()["cache_hits"], N);
    assert!(
        p.report()["error"]
            .as_str()
            .unwrap()
            .contains("this summary is not cached"),
        "{}",
        p.report()
    );
    assert!(p.aggregate_md().contains("src/f01.ts"), "{}", p.aggregate_md());

    // Summarized for real once, the next --cache-only run has it all.
    p.rlm(&batch(&url, &summarize(&[]))).run().assert_exit(0);
    assert_eq!(mock.requests(), 1, "only the summary was missing");
    mock.reset_counts();
    p.rlm(&batch(&url, &summarize(&["--cache-only"]))).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    assert_eq!(p.report()["aggregate_calls"][0]["cached"], true);
}

#[test]
fn a_cache_that_cannot_be_written_stops_the_run_before_any_call() {
    let mock = MockLlm::start();
    // A file where the cache directory should be: no answer could be kept.
    let p = Project::new().ts_files(2).file(".aiwg/rlm/cache", "not a directory");
    let url = mock.url();
    let out = p.rlm(&batch(&url, &["-o", "out"])).run();
    out.assert_exit(2);
    assert_eq!(mock.requests(), 0, "nothing is paid for that could not be kept");
    let line = out
        .stderr
        .lines()
        .find(|l| l.starts_with("rlm: error: "))
        .unwrap_or_default();
    assert!(
        line.contains(".aiwg/rlm/cache") && line.contains("before anything is paid for"),
        "{}",
        out.stderr
    );
}

/// A cache hit's result file is a hard link to the cache's copy of the answer (no new file
/// for the file system to allocate), and only while that copy holds exactly the answer: a
/// result file edited in place does not leak into the next run.
#[cfg(unix)]
#[test]
fn cached_result_files_are_links_to_the_answer_and_never_carry_an_edit() {
    use std::os::unix::fs::MetadataExt;
    let mock = MockLlm::start();
    let p = warmed_up(&mock);
    let first = p.out_dir();
    let name = file_names(&first)
        .into_iter()
        .find(|n| n.ends_with(".result.md"))
        .unwrap();
    let answer = std::fs::read_to_string(first.join(&name)).unwrap();
    let url = mock.url();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    let second = p.out_dir();
    let (a, b) = (
        std::fs::metadata(first.join(&name)).unwrap(),
        std::fs::metadata(second.join(&name)).unwrap(),
    );
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "one file, linked");
    assert!(
        b.nlink() >= 3,
        "the paying run's file, the cache's link to it, this run's"
    );
    // Edited in place (through every link to it): the next rerun writes the answer itself.
    std::fs::write(second.join(&name), "edited by hand").unwrap();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    assert_eq!(mock.requests(), 0);
    let third = p.out_dir();
    assert_eq!(std::fs::read_to_string(third.join(&name)).unwrap(), answer);
    assert_eq!(p.report()["status"], "SUCCESS");
    // ...and the one after links again, to the answer's new copy.
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    let fourth = p.out_dir();
    let (c, d) = (
        std::fs::metadata(third.join(&name)).unwrap(),
        std::fs::metadata(fourth.join(&name)).unwrap(),
    );
    assert_eq!((c.dev(), c.ino()), (d.dev(), d.ino()));
    assert_eq!(std::fs::read_to_string(fourth.join(&name)).unwrap(), answer);
}

/// Small files packed into one call: on a cached rerun, each file's result file is a hard
/// link to the cache's copy of its part of the answer (a rerun of many small files makes no
/// new files), and only while that copy holds exactly that part: an edit does not leak.
#[cfg(unix)]
#[test]
fn the_result_files_of_a_cached_pack_are_links_and_never_carry_an_edit() {
    use std::os::unix::fs::MetadataExt;
    let mock = MockLlm::start();
    let p = Project::new().ts_files(4);
    let url = mock.url();
    let run = |out: &str| {
        p.rlm(&crate::support::packed("src/*.ts", &url, &["-o", out]))
            .run()
            .assert_exit(0);
    };
    run("first");
    assert_eq!(mock.requests(), 1, "one call for the pack");
    run("second");
    assert_eq!(mock.requests(), 1, "the rerun is served from the cache");
    let name = |i: usize| format!("src-f{i:02}.ts.result.md");
    for i in 0..4 {
        let (a, b) = (
            std::fs::metadata(p.path().join("first").join(name(i))).unwrap(),
            std::fs::metadata(p.path().join("second").join(name(i))).unwrap(),
        );
        assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()), "{}: one file, linked", name(i));
        assert!(
            b.nlink() >= 3,
            "the paying run's file, the cache's link to it, this run's"
        );
        assert_eq!(
            p.read(&format!("first/{}", name(i))),
            p.read(&format!("second/{}", name(i)))
        );
    }
    // Each file's part is its own: no file holds another's answer.
    assert_ne!(
        p.read(&format!("second/{}", name(0))),
        p.read(&format!("second/{}", name(1)))
    );
    // Edited in place (through every link): the next rerun writes the part itself.
    let part = p.read(&format!("second/{}", name(2)));
    std::fs::write(p.path().join("second").join(name(2)), "edited by hand").unwrap();
    run("third");
    assert_eq!(mock.requests(), 1);
    assert_eq!(p.read(&format!("third/{}", name(2))), part);
    run("fourth");
    let (c, d) = (
        std::fs::metadata(p.path().join("third").join(name(2))).unwrap(),
        std::fs::metadata(p.path().join("fourth").join(name(2))).unwrap(),
    );
    assert_eq!(
        (c.dev(), c.ino()),
        (d.dev(), d.ino()),
        "linked again, to the part's new copy"
    );
    assert_eq!(p.read(&format!("fourth/{}", name(2))), part);
}

/// A rerun of more files than are written on one thread (64), a few of them changed: each
/// hit's result file holds its answer, its `task:completed` line comes in plan order, the
/// misses are called, and the store has every unit once, in plan order, the hits
/// `completed` from the start (they are added by the store's writer while their result
/// files are written).
#[test]
fn a_large_partly_cached_rerun_keeps_every_hit_in_order_in_the_log_and_the_store() {
    const MANY: usize = 150;
    let mock = MockLlm::start();
    let p = Project::new().ts_files(MANY);
    let url = mock.url();
    p.rlm(&batch(&url, &[])).run().assert_exit(0);
    let first_dir = p.out_dir();
    mock.reset_counts();
    for changed in ["src/f07.ts", "src/f100.ts"] {
        p.write(changed, &format!("export const changed = {:?};\n", changed));
    }
    let out = p.rlm(&batch(&url, &[])).run();
    out.assert_exit(0);
    assert_eq!(mock.requests(), 2, "only the changed files are sent");
    let report = p.report();
    assert_eq!(report["cache_hits"], MANY - 2);
    let dir = p.out_dir();
    let events: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let hits: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "task:completed" && e["cached"] == true)
        .map(|e| e["label"].as_str().unwrap())
        .collect();
    let mut in_order = hits.clone();
    in_order.sort_unstable();
    assert_eq!(hits.len(), MANY - 2);
    assert_eq!(hits, in_order, "the hits' lines come in plan order");
    for e in events
        .iter()
        .filter(|e| e["event"] == "task:completed" && e["cached"] == true)
    {
        let name = e["result_file"].as_str().unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join(name)).unwrap(),
            std::fs::read_to_string(first_dir.join(name)).unwrap(),
            "{name}"
        );
    }
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let store = rusqlite::Connection::open(p.path().join(".aiwg/rlm/store.sqlite3")).unwrap();
    let units: Vec<(String, String, i64)> = store
        .prepare("SELECT label, state, seq FROM units WHERE run_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([&run_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(units.len(), MANY);
    assert!(units.iter().all(|(_, state, _)| state == "completed"), "{units:?}");
    let labels: Vec<&str> = units.iter().map(|(label, _, _)| label.as_str()).collect();
    let mut sorted = labels.clone();
    sorted.sort_unstable();
    assert_eq!(labels, sorted, "the store keeps the plan's order");
    assert_eq!(
        units.iter().map(|(_, _, seq)| *seq).collect::<Vec<_>>(),
        (1..=MANY as i64).collect::<Vec<_>>()
    );
    let served: i64 = store
        .query_row(
            "SELECT COUNT(*) FROM units WHERE run_id = ?1 AND started_at IS NULL AND finished_at = queued_at",
            [&run_id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(
        served,
        (MANY - 2) as i64,
        "the hits were recorded completed when the run started"
    );
}
