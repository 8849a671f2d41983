//! JSON chunker tests: root arrays and objects, nested splits of oversize members, invalid
//! and line-delimited input, and properties that every chunk parses and nothing is lost.

use crate::content::chunk::tests::covers_all_lines;
use crate::content::chunk::{chunk, Chunk, ChunkOptions, ChunkStrategy};
use crate::content::content_type::ContentType;
use crate::content::count_lines;
use crate::content::detect::Detection;
use proptest::prelude::*;
use serde_json::{json, Value};

fn json_chunks(text: &str, opts: &ChunkOptions) -> Vec<Chunk> {
    let chunks = chunk(&Detection::given(ContentType::Json, None), text, opts);
    assert!(covers_all_lines(&chunks, count_lines(text)));
    chunks
}

fn parsed(c: &Chunk) -> Value {
    serde_json::from_str(&c.content).unwrap_or_else(|e| panic!("chunk {} is not JSON ({e}):\n{}", c.index, c.content))
}

fn events(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let mut e = json!({"id": i, "event": "click", "tags": ["a", "b"], "metadata": {"user_id": i * 7}});
            if i % 3 == 0 {
                e["metadata"]["source"] = json!("web");
            }
            e
        })
        .collect()
}

#[test]
fn a_root_array_is_split_into_valid_arrays_of_whole_elements() {
    let original = Value::Array(events(1000));
    let text = serde_json::to_string_pretty(&original).unwrap();
    let chunks = json_chunks(&text, &ChunkOptions::default());
    // 1000 elements, at most 350 a chunk → 350, 350, 300.
    assert_eq!(chunks.len(), 3);
    let mut all = Vec::new();
    for c in &chunks {
        assert_eq!(c.context.strategy, ChunkStrategy::Elements);
        all.extend(parsed(c).as_array().unwrap().iter().cloned());
    }
    assert_eq!(Value::Array(all), original);
    assert_eq!(chunks[1].context.json_path.as_deref(), Some("$[350..699]"));
    let schema = chunks[2].context.schema.as_ref().unwrap().to_string();
    assert_eq!(
        schema,
        "event (string), id (number), metadata (object), metadata.source (string; in 2 of 5), \
         metadata.user_id (number), tags (array)"
    );
    // Line ranges point at the elements in the original file: element 350 opens chunk 2.
    let index = crate::content::LineIndex::new(&text);
    assert_eq!(index.line(chunks[1].start_line), "  {");
    assert_eq!(parsed(&chunks[1])[0], original[350]);
}

#[test]
fn a_root_object_is_split_by_keys_and_an_oversize_member_inside_a_copy_of_its_parent() {
    // Written by hand, so the members keep this order whatever serde_json's map order is.
    let (meta, events, totals) = (json!({"version": 3}), Value::Array(events(900)), json!({"clicks": 900}));
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap();
    let text = format!(
        "{{\n  \"meta\": {},\n  \"events\": {},\n  \"totals\": {}\n}}\n",
        pretty(&meta),
        pretty(&events),
        pretty(&totals)
    );
    let opts = ChunkOptions {
        max_chunk_tokens: 13_334,
        ..ChunkOptions::default()
    };
    let chunks = json_chunks(&text, &opts);
    let values: Vec<Value> = chunks.iter().map(parsed).collect();
    assert!(values.len() >= 4, "{} chunks", values.len());
    assert!(chunks.iter().all(|c| c.content.len() <= 40_000 + 64));
    // The first chunk holds `meta` and the first events, the last one the last events and
    // `totals`: small members share chunks with the parts of a split one.
    assert_eq!(values[0]["meta"], meta, "first chunk: {}", chunks[0].content);
    assert!(values[0]["events"].as_array().is_some_and(|e| !e.is_empty()));
    let last = values.last().unwrap();
    assert_eq!(last["totals"], totals, "last chunk: {}", chunks.last().unwrap().content);
    assert!(last["events"].as_array().is_some_and(|e| !e.is_empty()));
    let mut rebuilt = Vec::new();
    for (c, v) in chunks.iter().zip(&values) {
        assert!(c.context.json_path.as_deref().unwrap().contains("$.events["));
        rebuilt.extend(v["events"].as_array().unwrap().iter().cloned());
    }
    assert!(Value::Array(rebuilt) == events, "the events were not reassembled");
    let first_place = chunks[0].context.json_path.as_deref().unwrap();
    assert!(first_place.starts_with("$.meta, then $.events[0.."), "{first_place}");
    let last_place = chunks.last().unwrap().context.json_path.as_deref().unwrap();
    assert!(last_place.ends_with("..899], then $.totals"), "{last_place}");
    assert!(chunks[1]
        .context
        .schema
        .as_ref()
        .unwrap()
        .to_string()
        .contains("metadata.user_id (number)"));
}

#[test]
fn no_small_member_is_a_call_of_its_own() {
    // endpoints.json's shape: a big array of partitions, then `"version": 3`.
    let partitions: Vec<Value> = (0..3)
        .map(|p| {
            let services: serde_json::Map<String, Value> = (0..200)
                .map(|i| {
                    (
                        format!("svc{i:03}"),
                        json!({"hostname": format!("svc{i}.p{p}.example.com")}),
                    )
                })
                .collect();
            json!({"partition": format!("p{p}"), "defaults": {"protocols": ["https"]}, "services": services})
        })
        .collect();
    let text = serde_json::to_string_pretty(&json!({"partitions": partitions, "version": 3})).unwrap();
    let opts = ChunkOptions {
        max_chunk_tokens: 2_000,
        ..ChunkOptions::default()
    };
    let chunks = json_chunks(&text, &opts);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    let sizes: Vec<usize> = chunks.iter().map(|c| c.content.len()).collect();
    // Every chunk but the last is more than half full.
    let small = sizes[..sizes.len() - 1]
        .iter()
        .filter(|&&b| b < opts.max_bytes() / 2)
        .count();
    assert_eq!(small, 0, "{sizes:?}");
    let last = parsed(chunks.last().unwrap());
    assert_eq!(last["version"], 3);
    assert!(last.pointer("/partitions/0/services").is_some(), "{last}");
    assert_eq!(
        rebuilt_leaves(&chunks),
        count_leaves(&serde_json::from_str(&text).unwrap())
    );
}

#[test]
fn minified_json_on_one_line_is_split_by_bytes() {
    let original = Value::Array(events(3000));
    let text = serde_json::to_string(&original).unwrap();
    let chunks = json_chunks(&text, &ChunkOptions::default());
    assert!(chunks.len() >= 3);
    assert!(chunks.iter().all(|c| (c.start_line, c.end_line) == (1, 1)));
    let all: Vec<Value> = chunks
        .iter()
        .flat_map(|c| parsed(c).as_array().unwrap().clone())
        .collect();
    assert_eq!(Value::Array(all), original);
}

#[test]
fn scalars_empty_containers_invalid_json_and_json_lines() {
    for text in ["42\n", "[]\n", "{}", "\"text\""] {
        let chunks = json_chunks(text, &ChunkOptions::default());
        assert_eq!((chunks.len(), chunks[0].context.strategy), (1, ChunkStrategy::Whole));
    }
    let broken: String = std::iter::once("[\n".to_owned())
        .chain((0..300).map(|i| format!("  {{\"id\": {i}}},\n")))
        .collect();
    let chunks = json_chunks(&broken, &ChunkOptions::default());
    assert_eq!(chunks[0].context.strategy, ChunkStrategy::Windows);
    assert!(chunks[0].context.note.as_deref().unwrap().starts_with("not valid JSON"));
    let lines: String = (0..2000).map(|i| format!("{{\"id\": {i}}}\n")).collect();
    let chunks = json_chunks(&lines, &ChunkOptions::default());
    assert_eq!(chunks[0].context.strategy, ChunkStrategy::Lines);
    assert!(chunks[0].context.note.as_deref().unwrap().contains("JSON Lines"));
}

#[test]
fn strings_with_brackets_and_escapes_do_not_confuse_the_scanner() {
    let original = Value::Array(
        (0..10)
            .map(|i| json!({"s": format!("]}}{{[\\\"{i}"), "t": "\u{e9}\u{1F600}", "n": null, "b": true}))
            .collect(),
    );
    let text = serde_json::to_string_pretty(&original).unwrap();
    let opts = ChunkOptions {
        json_elements: 3,
        ..ChunkOptions::default()
    };
    let chunks = json_chunks(&text, &opts);
    assert_eq!(chunks.len(), 4);
    let all: Vec<Value> = chunks
        .iter()
        .flat_map(|c| parsed(c).as_array().unwrap().clone())
        .collect();
    assert_eq!(Value::Array(all), original);
}

/// Arbitrary JSON values, nested a few levels.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z\"\\\\\\[\\]{},: \n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The scalars in all chunks together: wrappers copy keys, never values, so this equals
/// the original's count exactly when nothing was lost or repeated.
fn rebuilt_leaves(chunks: &[Chunk]) -> usize {
    chunks.iter().map(|c| count_leaves(&parsed(c))).sum()
}

fn count_leaves(v: &Value) -> usize {
    match v {
        Value::Array(items) => items.iter().map(count_leaves).sum(),
        Value::Object(map) => map.values().map(count_leaves).sum(),
        _ => 1,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_chunk_parses_and_no_leaf_is_lost(
        root in prop_oneof![
            prop::collection::vec(value(), 0..40).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,5}", value(), 0..20).prop_map(|m| Value::Object(m.into_iter().collect())),
        ],
        pretty in any::<bool>(),
        elements in 1usize..8,
        max_tokens in 64u64..400,
    ) {
        let text = if pretty { serde_json::to_string_pretty(&root).unwrap() } else { serde_json::to_string(&root).unwrap() };
        let opts = ChunkOptions { json_elements: elements, max_chunk_tokens: max_tokens, ..ChunkOptions::default() };
        let chunks = chunk(&Detection::given(ContentType::Json, None), &text, &opts);
        prop_assert!(covers_all_lines(&chunks, count_lines(&text)));
        for c in &chunks {
            prop_assert!(crate::tokens::upper_bound(c.content.len() as u64) <= max_tokens);
            prop_assert!(serde_json::from_str::<Value>(&c.content).is_ok(), "chunk {} invalid:\n{}", c.index, c.content);
        }
        // Splitting copies parents' keys but never values: the leaves add up exactly.
        prop_assert_eq!(rebuilt_leaves(&chunks), count_leaves(&root));
    }

    #[test]
    fn root_arrays_concatenate_back_to_the_original(
        items in prop::collection::vec(value(), 1..60),
        elements in 1usize..10,
    ) {
        let root = Value::Array(items);
        let text = serde_json::to_string_pretty(&root).unwrap();
        let opts = ChunkOptions { json_elements: elements, ..ChunkOptions::default() };
        let chunks = chunk(&Detection::given(ContentType::Json, None), &text, &opts);
        let all: Vec<Value> = chunks.iter().flat_map(|c| parsed(c).as_array().unwrap().clone()).collect();
        prop_assert_eq!(Value::Array(all), root);
    }
}

#[test]
fn an_object_of_big_members_is_packed_into_documents_of_several_members() {
    // Like botocore's endpoints.json: services, each an object of a few hundred bytes.
    let services: serde_json::Map<String, Value> = (0..120)
        .map(|i| {
            let endpoints: serde_json::Map<String, Value> = (0..8)
                .map(|r| {
                    (
                        format!("region-{r}"),
                        json!({"hostname": format!("svc{i}.region-{r}.example.com")}),
                    )
                })
                .collect();
            (format!("svc{i:03}"), json!({"endpoints": endpoints}))
        })
        .collect();
    let text = serde_json::to_string_pretty(
        &json!({"partitions": [{"partition": "aws", "services": services}], "version": 3}),
    )
    .unwrap();
    let opts = ChunkOptions {
        max_chunk_tokens: 5_000,
        ..ChunkOptions::default()
    };
    let chunks = json_chunks(&text, &opts);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    let tokens: Vec<u64> = chunks
        .iter()
        .map(|c| crate::tokens::upper_bound(c.content.len() as u64))
        .collect();
    // Every chunk but those at the edges of a split is more than half full.
    let full = tokens.iter().filter(|&&t| t > 2_500).count();
    assert!(full + 3 >= chunks.len(), "{tokens:?}");
    let mut names = 0;
    for c in &chunks {
        let v = parsed(c);
        if let Some(s) = v.pointer("/partitions/0/services").and_then(Value::as_object) {
            names += s.len();
            assert!(
                s.len() > 1 || c.index == chunks.len() - 1,
                "chunk {} holds one service",
                c.index
            );
        }
    }
    assert_eq!(names, 120);
    // A content line maps to the element's line in the file; a copied parent line to none.
    let c = &chunks[1];
    let index = crate::content::LineIndex::new(&text);
    let content = crate::content::LineIndex::new(&c.content);
    assert_eq!(c.original_line(1), None);
    let mapped = (1..=content.len()).filter_map(|k| c.original_line(k).map(|n| (k, n)));
    for (k, n) in mapped {
        assert_eq!(
            content.line(k).trim().trim_end_matches(','),
            index.line(n).trim().trim_end_matches(',')
        );
    }
}

#[test]
fn a_huge_string_value_is_cut_as_text_with_a_note() {
    let blob = "A".repeat(50_000);
    let text = format!("{{\"small\": 1, \"blob\": \"{blob}\", \"after\": [1, 2]}}\n");
    let opts = ChunkOptions {
        max_chunk_tokens: 4_000,
        ..ChunkOptions::default()
    };
    let chunks = json_chunks(&text, &opts);
    crate::content::chunk::tests::assert_within_budget(&chunks, &opts);
    assert_eq!(parsed(&chunks[0]), json!({"small": 1}));
    assert_eq!(parsed(chunks.last().unwrap()), json!({"after": [1, 2]}));
    let pieces: Vec<&Chunk> = chunks.iter().filter(|c| c.partial_line.is_some()).collect();
    assert_eq!(pieces.len(), 5);
    assert!(pieces[0]
        .context
        .note
        .as_deref()
        .unwrap()
        .starts_with("part 1 of 5 of $.blob (on line 1)"));
    let rebuilt: String = pieces.iter().map(|c| c.content.as_str()).collect();
    assert_eq!(rebuilt, format!("\"blob\": \"{blob}\""));
}
