//! `--dry-run`: the plan and what the real run would do, without calling or writing.
//!
//! With `--json`, one document on stdout, written as it is rendered — a unit at a time, so
//! a plan of tens of thousands of units never sits in memory twice. Each unit shows its
//! inputs with their line ranges, the exact content the model reads, and the request
//! exactly as it would be sent (from [`crate::request::render`], the executor's renderer),
//! with the start of its user message that every unit shares (the prompt-cache prefix).

use std::collections::HashSet;
use std::io::Write;

use serde_json::{json, Map, Value};

use super::batch_api_run::{submitted_within, Delivery};
use super::estimate;
use super::output::{calls_text, framing_text, unit_breakdown};
use super::planning::Plan;
use crate::content::{self, head_lines, Analyst, SNIFF_LINES};
use crate::escape;
use crate::input::InputFile;
use crate::printer::Printer;
use crate::request;
use crate::settings::BatchSettings;
use crate::unit::{BatchReader, UnitBody, WorkUnit};

/// Prints the plan.
pub fn show(printer: &Printer, settings: &BatchSettings, plan: &Plan) {
    let cost = estimate::verdict(settings, plan.estimate.usd);
    // What the real run would say when it stops before any call: the same error.
    let refusal = plan.blocker.as_ref().or(cost.as_ref().err());
    let verdict = match (&plan.blocker, &cost) {
        (Some(b), _) => format!("cannot start: {b}"),
        (None, Ok(false)) => "proceeds".to_string(),
        (None, Ok(true)) => format!(
            "asks to confirm the {} (pass --yes)",
            crate::money::usd(plan.estimate.usd)
        ),
        (None, Err(e)) => format!("refused: {e}"),
    };
    let cut = batch_cut(settings, plan);
    let verdict = match (&cut, refusal) {
        (Some(cut), None) if cut.submitted < cut.requests => format!("{verdict}, {}", cut.text()),
        _ => verdict,
    };
    if settings.output.json {
        let refusal =
            refusal.map(|e| json!({"kind": e.kind(), "message": e.to_string(), "exit_code": e.exit_status().code()}));
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        let written =
            write_json(&mut out, settings, plan, (&verdict, cut.as_ref()), refusal).and_then(|()| out.flush());
        if let Err(e) = written {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                printer.error(&format!("cannot write the plan to stdout: {e}"));
            }
        }
        return;
    }
    let hit: HashSet<usize> = plan.pre.hits.iter().map(|(i, _)| *i).collect();
    let files = files_of(plan);
    // Printed a block of lines at a time: a million units' listing is never one string.
    let mut text = String::new();
    for (i, u) in plan.units.iter().enumerate() {
        let state = match (&u.blocked, hit.contains(&i)) {
            (Some(_), _) => "too-large",
            (None, true) => "cached",
            (None, false) => "call",
        };
        text.push_str(&format!(
            "{state:<9} {:>9} B  {}\n",
            size_of(&files, u),
            escape::name(&u.label)
        ));
        if text.len() >= 1 << 16 {
            printer.data(text.trim_end_matches('\n'));
            text.clear();
        }
    }
    let files = plan.manifest.files.len();
    let units = if plan.units.len() == files && plan.units.iter().all(|u| u.inputs.len() == 1) {
        String::new()
    } else {
        format!(" in {} units ({})", plan.units.len(), unit_breakdown(&plan.units))
    };
    text.push_str(&format!(
        "dry run: {files} file{}{units}, {} cached, {}, ~{} input tokens{}, estimated {}; nothing was called\nthe real \
         run {verdict}",
        if files == 1 { "" } else { "s" },
        plan.pre.hits.len(),
        calls_text(&plan.estimate),
        plan.estimate.input_tokens,
        framing_text(&plan.estimate),
        match plan.estimate.price_tier {
            crate::provider::catalog::PriceTier::Batch if !plan.model.is_free() => {
                format!("{} at batch price", plan.model.cost_text(plan.estimate.usd))
            }
            _ => plan.model.cost_text(plan.estimate.usd),
        }
    ));
    printer.data(&text);
}

/// Under `--batch-api` and `--max-cost`, what the run would submit: a batch is paid for
/// whole, so the run submits only the requests whose worst case fits in what is left of
/// the budget, counted as the run counts them, and ends BUDGET_EXCEEDED with the rest not
/// run.
struct BatchCut {
    /// Requests the map phase would send.
    requests: usize,
    /// Of them, those that fit: the first ones, in the order they are sent.
    submitted: usize,
    /// The worst case of all `requests`.
    worst_usd: f64,
    /// What is left of `--max-cost` (earlier attempts' spend counted).
    left_usd: f64,
}

impl BatchCut {
    fn text(&self) -> String {
        format!(
            "but --max-cost lets only {} of its {} batch requests be submitted (each counted at its worst: its \
             input, and max_tokens of output, at the batch price; {} in all, {} left of the budget), so it ends \
             BUDGET_EXCEEDED",
            self.submitted,
            self.requests,
            crate::money::usd(self.worst_usd),
            crate::money::usd(self.left_usd.max(0.0)),
        )
    }

    fn json(&self) -> Value {
        json!({
            "requests": self.requests,
            "submitted": self.submitted,
            "not_submitted": self.requests - self.submitted,
            "worst_case_usd": self.worst_usd,
            "budget_left_usd": self.left_usd,
        })
    }
}

/// What `--max-cost` lets the batch-API path submit (see [`BatchCut`]); `None` without
/// either.
fn batch_cut(settings: &BatchSettings, plan: &Plan) -> Option<BatchCut> {
    if !matches!(plan.delivery, Delivery::BatchApi { .. }) {
        return None;
    }
    let resume = settings.resume.as_ref();
    let left = settings.budget.max_cost? - resume.map_or(0.0, |r| r.spent_usd);
    // The units the map phase sends, in its order (a failed one is left out by `--failed`).
    let worst: Vec<f64> = plan
        .pre
        .misses
        .iter()
        .map(|&i| &plan.units[i])
        .filter(|u| !resume.is_some_and(|r| r.skip.contains(u.id.as_str())))
        .map(|u| plan.model.worst_batch_cost(u.prompt_bytes, plan.requests.max_tokens))
        .collect();
    let submitted = submitted_within(left, worst.iter().copied());
    Some(BatchCut {
        requests: worst.len(),
        submitted,
        worst_usd: worst.iter().sum(),
        left_usd: left,
    })
}

/// The manifest's files in the order of their paths, looked up by binary search: a list of
/// references (the manifest's own order is kept when it is sorted already, as a walk's is),
/// not a map of a million entries beside the plan.
struct Files<'a>(Vec<&'a InputFile>);

impl<'a> Files<'a> {
    fn get(&self, path: &str) -> Option<&'a InputFile> {
        let at = self.0.binary_search_by(|f| f.display.as_ref().cmp(path)).ok()?;
        Some(self.0[at])
    }
}

fn files_of(plan: &Plan) -> Files<'_> {
    let mut files: Vec<&InputFile> = plan.manifest.files.iter().collect();
    if !files.is_sorted_by(|a, b| a.display <= b.display) {
        files.sort_unstable_by(|a, b| a.display.cmp(&b.display));
    }
    Files(files)
}

/// What a unit reads of its files, in bytes: a whole file's size, a chunk's lines (of the
/// text as read: a file decoded from UTF-16 counts its UTF-8).
fn size_of(files: &Files<'_>, unit: &WorkUnit) -> u64 {
    unit.inputs
        .iter()
        .map(|i| match i.span {
            Some(_) => i.bytes,
            None => files.get(i.display.as_ref()).map_or(0, |f| f.size),
        })
        .sum()
}

fn write_json(
    out: &mut impl Write,
    settings: &BatchSettings,
    plan: &Plan,
    (verdict, cut): (&str, Option<&BatchCut>),
    refusal: Option<Value>,
) -> std::io::Result<()> {
    let Plan {
        model,
        manifest,
        pre,
        estimate,
        units,
        ..
    } = plan;
    let mut head = Map::new();
    let mut put = |k: &str, v: Value| {
        head.insert(k.to_string(), v);
    };
    put("dry_run", json!(true));
    put("model", json!(model.id));
    put("provider", json!(settings.provider.kind.name()));
    put("max_parallel", json!(settings.exec.parallelism.width));
    put("aggregate", json!(settings.task.aggregate.name()));
    put("files_matched", json!(manifest.matched()));
    put("files_sent", json!(manifest.files.len()));
    put("units_planned", json!(units.len()));
    put("plan_id", json!(plan.plan_id));
    if let Some(shard) = settings.input.shard {
        put(
            "shard",
            json!({"index": shard.index, "count": shard.count, "plan_units": plan.plan_units}),
        );
    }
    put("skipped", json!(manifest.skipped));
    put("unreadable", json!(manifest.unreadable));
    put("cache_hits", json!(pre.hits.len()));
    put("cache_misses", json!(pre.misses.len()));
    put("estimated_calls", json!(estimate.calls));
    put("estimated_aggregate_calls", json!(estimate.aggregate_calls));
    put("estimated_input_tokens", json!(estimate.input_tokens));
    put("estimated_content_tokens", json!(estimate.content_tokens));
    put("estimated_framing_tokens", json!(estimate.framing_tokens));
    put("estimated_output_tokens", json!(estimate.output_tokens));
    put("estimated_cost_usd", json!(estimate.usd));
    put(
        "price_known",
        json!(model.price_basis == crate::provider::model::PriceBasis::Listed),
    );
    put(
        "estimate",
        json!({
            "calls": estimate.calls,
            "aggregate_calls": estimate.aggregate_calls,
            "input_tokens": estimate.input_tokens,
            "content_tokens": estimate.content_tokens,
            "framing_tokens": estimate.framing_tokens,
            "output_tokens": estimate.output_tokens,
            "cache_read_tokens": estimate.cache_read_tokens,
            "cache_write_tokens": estimate.cache_write_tokens,
            "cost_usd": estimate.usd,
            "price_basis": model.price_basis.shown(estimate.price_tier),
            "price_tier": estimate.price_tier,
        }),
    );
    put("batch_api", json!(settings.exec.batch_api.mode));
    put("price_basis", json!(model.price_basis.shown(estimate.price_tier)));
    put("price_tier", json!(estimate.price_tier));
    put("cost_check", json!(verdict));
    // Under `--batch-api` and `--max-cost`: the requests the run would submit before the cap.
    put("batch_budget", cut.map_or(Value::Null, BatchCut::json));
    // The error the real run would stop with before any call (null: it would start), as
    // its own `--json` error document would give it.
    put("refusal", refusal.unwrap_or(Value::Null));
    put("warnings", json!(plan.warnings));
    // The head's fields, then the two long lists, each element as it is rendered.
    let head = serde_json::to_string(&Value::Object(head)).map_err(std::io::Error::other)?;
    out.write_all(head.trim_end_matches('}').as_bytes())?;
    out.write_all(b",\"files\":[")?;
    for (i, file) in manifest.files.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &file_entry(file))?;
    }
    out.write_all(b"],\"units\":[")?;
    let hit: HashSet<usize> = pre.hits.iter().map(|(i, _)| *i).collect();
    let files = files_of(plan);
    for (i, unit) in units.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &unit_entry(plan, &files, unit, hit.contains(&i)))?;
    }
    out.write_all(b"]}\n")
}

/// A file of the manifest, with its detected content type.
fn file_entry(file: &InputFile) -> Value {
    let mut value = serde_json::to_value(file).unwrap_or_default();
    let detection = file.detection.unwrap_or_else(|| {
        let text = file.text().unwrap_or_default();
        content::detect(&file.display, head_lines(&text.text, SNIFF_LINES))
    });
    value["content_type"] = json!(detection.content_type);
    value["detected_by"] = json!(detection.detected_by);
    value["language"] = json!(detection.language);
    if let Some(source) = file.source.as_deref() {
        value["encoding"] = json!(source.encoding);
    }
    value
}

/// What a chunk carries, as fields tools read (the prompt words the same): its own lines,
/// the lines prepended for context (a code file's import block and the headers of the
/// classes and functions it is cut inside, outermost first; a table's header row), the
/// lines it shares with the chunk before, and its note (an item too big, windowed; an
/// import block left out).
fn chunk_entry(chunk: &content::Chunk, content_type: content::ContentType) -> Value {
    let span = |r: crate::content::LineRange| json!({"start_line": r.start, "end_line": r.end});
    let mut context: Vec<Value> = Vec::new();
    if let Some(prepended) = chunk.context.prepended {
        let role = match content_type {
            content::ContentType::SourceCode => "import_block",
            _ => "header_row",
        };
        let mut entry = span(prepended);
        entry["role"] = json!(role);
        context.push(entry);
    }
    for &header in &chunk.context.header {
        let mut entry = span(header);
        entry["role"] = json!("enclosing_header");
        context.push(entry);
    }
    json!({
        "index": chunk.index,
        "total": chunk.total,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "strategy": chunk.context.strategy,
        "context_lines": context,
        "overlap_before": chunk.context.overlap_before.map(span),
        "note": chunk.context.note,
        "partial_line": chunk.partial_line,
    })
}

/// One unit: the plan's fields, what the model reads, and the request exactly as sent.
fn unit_entry(plan: &Plan, files: &Files<'_>, unit: &WorkUnit, cached: bool) -> Value {
    // The plan holds no text: it is read again, as it would be to send the unit.
    let (rendered, loaded) = match unit.with_text() {
        Ok(loaded) => (request::render(&loaded, &plan.requests), loaded),
        Err(_) => (
            request::render_planned(unit, &plan.requests).0,
            std::borrow::Cow::Borrowed(unit),
        ),
    };
    let unit = loaded.as_ref();
    let inputs: Vec<Value> = unit
        .inputs
        .iter()
        .map(|i| {
            let lines = files.get(i.display.as_ref()).map_or(0, |f| f.lines);
            let (start, end) = i.span.map_or((1, lines.max(1)), |s| (s.start, s.end));
            json!({"path": i.display, "start_line": start, "end_line": end, "content_hash": i.content_hash})
        })
        .collect();
    let (content_type, analyst, content) = match &unit.body {
        UnitBody::Plain => {
            let input = unit.inputs.first();
            let text = input.map_or("", |i| i.source.text.as_str());
            let detection = content::detect(&unit.label, head_lines(text, SNIFF_LINES));
            (detection.content_type, "generic", text.to_string())
        }
        UnitBody::Piece(p) => (
            p.detection.content_type,
            Analyst::for_content(p.detection.content_type).as_str(),
            p.chunk.content.clone(),
        ),
        UnitBody::Batch(b) => (
            b.detection.content_type,
            match b.reader {
                BatchReader::Analyst => Analyst::for_content(b.detection.content_type).as_str(),
                BatchReader::Generic => "generic",
            },
            unit.inputs
                .iter()
                .map(|i| i.source.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    };
    let mut entry = json!({
        "id": unit.id,
        "path": unit.label,
        "kind": match &unit.body {
            UnitBody::Plain => "whole_file",
            UnitBody::Piece(_) if unit.inputs.first().is_some_and(|i| i.span.is_some()) => "chunk",
            UnitBody::Piece(_) => "whole_file_analyst",
            UnitBody::Batch(_) => "batch",
        },
        "bytes": size_of(files, unit),
        "content_hash": unit.inputs.first().map(|i| i.content_hash.as_ref()),
        "cache_key": unit.cache_key.as_str(),
        "cached": cached,
        "result_file": unit.result_name,
        "estimated_input_tokens": unit.estimated_input_tokens,
        "estimated_content_tokens": estimate::content_tokens(unit),
        "blocked": unit.blocked,
        "content_type": content_type,
        "analyst": analyst,
        "inputs": inputs,
        "content": content,
        "expect": rendered.expect,
        // `user` is the whole user message; `shared` its start, the same in every unit, and
        // `cache_prefix` whether system + shared are marked for the provider's prompt cache.
        "prompt": {
            "system": rendered.request.system,
            "user": rendered.request.user_text(),
            "shared": rendered.request.shared,
            "cache_prefix": rendered.request.cache_prefix,
        },
        "schema": rendered.request.schema.as_deref(),
    });
    if let UnitBody::Batch(b) = &unit.body {
        entry["batch_files"] = json!(b.members);
    }
    if let UnitBody::Piece(p) = &unit.body {
        entry["chunk"] = chunk_entry(&p.chunk, p.detection.content_type);
    }
    if let UnitBody::Plain = &unit.body {
        entry["analyst_for_type"] = json!(Analyst::for_content(content_type).as_str());
    }
    entry
}
