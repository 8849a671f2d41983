//! An item's record: its ingested fields, then each earlier phase's answer for it laid
//! over them (later phases win), joined by id. Filters, clustering, reviews and reports
//! read records, so `files` (ingested) and `fingerprint` (an answer) sit side by side.

use std::collections::HashMap;

use serde_json::Value;

use super::definition::{JobDefinition, PhaseKind};
use super::ingest::id_key;
use super::job_dir::{read_json_if_whole, JobDir};
use super::state::JobRecord;

/// Every item's record, in ingest order.
#[derive(Debug, Clone, Default)]
pub struct Records {
    order: Vec<String>,
    by_id: HashMap<String, Value>,
}

impl Records {
    /// The items as they were ingested.
    pub fn new(items: &[Value], id_field: &str) -> Self {
        let mut records = Records::default();
        for item in items {
            if let Some(key) = item.get(id_field).and_then(id_key) {
                records.order.push(key.clone());
                records.by_id.insert(key, item.clone());
            }
        }
        records
    }

    /// Lays answer objects over the records of their ids.
    pub fn overlay(&mut self, answers: &[Value], id_field: &str) {
        for answer in answers {
            let (Some(key), Some(fields)) = (answer.get(id_field).and_then(id_key), answer.as_object()) else {
                continue;
            };
            if let Some(Value::Object(record)) = self.by_id.get_mut(&key) {
                for (k, v) in fields {
                    if k != id_field {
                        record.insert(k.clone(), v.clone());
                    }
                }
            }
        }
    }

    /// Drops the records of `keys`.
    pub fn without(&mut self, keys: &std::collections::HashSet<String>) {
        self.order.retain(|k| !keys.contains(k));
        self.by_id.retain(|k, _| !keys.contains(k));
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.by_id.get(key)
    }

    /// The records in ingest order, with their keys.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.order
            .iter()
            .filter_map(|k| self.by_id.get(k).map(|v| (k.as_str(), v)))
    }

    pub fn count(&self) -> usize {
        self.order.len()
    }
}

/// The records as phase `index` sees them: items, then the answers of every map and
/// review phase before it.
pub fn records_before(dir: &JobDir, definition: &JobDefinition, items: &[Value], index: usize) -> Records {
    let mut records = Records::new(items, &definition.id);
    for phase in &definition.phases[..index] {
        if matches!(phase.kind, PhaseKind::Map | PhaseKind::Review) {
            if let Some(Value::Array(answers)) = read_json_if_whole::<Value>(&dir.data(&phase.name)) {
                records.overlay(&answers, &definition.id);
            }
        }
    }
    records
}

/// The records phase `index` works on: as [`records_before`], without the items an
/// earlier phase left unprocessed — a cluster or a review of an item that was never
/// classified would present a guess as a result.
pub fn processed_before(dir: &JobDir, record: &JobRecord, items: &[Value], index: usize) -> (Records, usize) {
    let mut records = records_before(dir, &record.definition, items, index);
    let left_out = record.unprocessed_before(index);
    let before = records.count();
    records.without(&left_out);
    let dropped = before - records.count();
    (records, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_laid_over_items_by_id() {
        let mut r = Records::new(&[json!({"n": 1, "files": ["a"]}), json!({"n": 2})], "n");
        r.overlay(&[json!({"n": "1", "fingerprint": "x"}), json!({"n": 9, "x": 1})], "n");
        assert_eq!(
            r.get("1").unwrap(),
            &json!({"n": 1, "files": ["a"], "fingerprint": "x"})
        );
        assert_eq!(r.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["1", "2"]);
    }
}
