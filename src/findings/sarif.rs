//! SARIF 2.1.0 output: one run of the tool `rlm`, one rule per distinct finding type, one
//! result per finding, each located relative to the repository root (`%SRCROOT%`) — the
//! shape GitHub code scanning imports with `upload-sarif`.
//!
//! Hand-written serde types: we emit a small, fixed subset of SARIF, and the full type
//! crates are far heavier to compile than these few structs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ArtifactBase, Finding};

/// The schema URI written into `$schema`.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// What the log says about the tool that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// Where to learn about the tool; omitted when unknown.
    pub information_uri: Option<String>,
}

impl ToolInfo {
    /// This build of rlm: its version, and its repository or homepage from `Cargo.toml`.
    pub fn rlm() -> ToolInfo {
        let uri = [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
            .into_iter()
            .find(|u| !u.is_empty());
        ToolInfo {
            name: "rlm".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            information_uri: uri.map(str::to_string),
        }
    }
}

/// A SARIF log (the top-level object).
#[derive(Debug, Clone, Serialize)]
pub struct SarifLog {
    #[serde(rename = "$schema")]
    pub schema: &'static str,
    pub version: &'static str,
    pub runs: Vec<Run>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub tool: Tool,
    pub results: Vec<SarifResult>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    pub driver: Driver,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Driver {
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub information_uri: Option<String>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub short_description: Message,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub text: String,
}

/// One result (SARIF's name; `Result` would shadow the prelude).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SarifResult {
    pub rule_id: String,
    pub rule_index: usize,
    pub level: &'static str,
    pub message: Message,
    pub locations: Vec<Location>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Location {
    pub physical_location: PhysicalLocation,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhysicalLocation {
    pub artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<SarifRegion>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactLocation {
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri_base_id: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SarifRegion {
    pub start_line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
}

/// The SARIF log for `findings`, paths placed with `base`. Rules are sorted by id so the
/// output does not depend on answer order more than it must; results keep their order.
pub fn sarif_log(findings: &[Finding], base: &ArtifactBase, tool: &ToolInfo) -> SarifLog {
    let rule_ids: BTreeMap<&str, usize> = {
        let mut ids: Vec<&str> = findings.iter().map(Finding::rule_id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect()
    };
    let rules = rule_ids
        .keys()
        .map(|id| Rule {
            id: (*id).to_string(),
            short_description: Message {
                text: if *id == super::DEFAULT_RULE {
                    "A finding whose answer named no type".to_string()
                } else {
                    format!("Findings of type {id} reported by the model")
                },
            },
        })
        .collect();
    let results = findings
        .iter()
        .map(|f| {
            let (uri, uri_base_id) = base.sarif_uri(&f.path);
            SarifResult {
                rule_id: f.rule_id().to_string(),
                rule_index: rule_ids[f.rule_id()],
                level: f.level.name(),
                message: Message {
                    text: f.message.clone(),
                },
                locations: vec![Location {
                    physical_location: PhysicalLocation {
                        artifact_location: ArtifactLocation { uri, uri_base_id },
                        region: f.region.map(|r| SarifRegion {
                            start_line: r.start_line,
                            end_line: r.end_line,
                        }),
                    },
                }],
            }
        })
        .collect();
    SarifLog {
        schema: SCHEMA_URI,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: tool.name.clone(),
                    version: tool.version.clone(),
                    information_uri: tool.information_uri.clone(),
                    rules,
                },
            },
            results,
        }],
    }
}

/// [`sarif_log`] as pretty-printed JSON with a trailing newline, ready to write to
/// `results.sarif`.
pub fn to_json(findings: &[Finding], base: &ArtifactBase, tool: &ToolInfo) -> String {
    let log = sarif_log(findings, base, tool);
    // Serialising these plain structs cannot fail (string keys, no maps of non-strings).
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::findings::{Level, Region};

    fn finding(path: &str, line: Option<(u64, Option<u64>)>, level: Level, rule: Option<&str>) -> Finding {
        Finding {
            path: path.into(),
            region: line.and_then(|(s, e)| Region::new(s, e)),
            level,
            message: format!("{level} in {path}"),
            rule: rule.map(str::to_string),
            scope: None,
            evidence: None,
        }
    }

    fn tool() -> ToolInfo {
        ToolInfo {
            name: "rlm".into(),
            version: "0.1.0".into(),
            information_uri: Some("https://example.com/rlm".into()),
        }
    }

    fn sample() -> Vec<Finding> {
        vec![
            finding(
                "src/auth/login.ts",
                Some((42, Some(58))),
                Level::Error,
                Some("sql-injection"),
            ),
            finding("src/auth/login.ts", Some((7, None)), Level::Warning, None),
            finding("src/a b/ünï.py", None, Level::Note, Some("style")),
            finding("/outside/x.c", Some((1, None)), Level::Warning, Some("sql-injection")),
        ]
    }

    fn as_value(findings: &[Finding], base: &ArtifactBase) -> Value {
        serde_json::from_str(&to_json(findings, base, &tool())).expect("valid JSON")
    }

    #[test]
    fn one_run_with_the_tool_and_one_rule_per_type() {
        let v = as_value(&sample(), &ArtifactBase::at_root());
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(v["runs"].as_array().map(Vec::len), Some(1));
        let driver = &v["runs"][0]["tool"]["driver"];
        assert_eq!(driver["name"], "rlm");
        assert_eq!(driver["version"], "0.1.0");
        assert_eq!(driver["informationUri"], "https://example.com/rlm");
        let ids: Vec<&str> = driver["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["rlm/finding", "sql-injection", "style"]);
        assert!(driver["rules"][1]["shortDescription"]["text"]
            .as_str()
            .unwrap()
            .contains("sql-injection"));
    }

    #[test]
    fn results_point_at_their_rule_level_and_location() {
        let v = as_value(&sample(), &ArtifactBase::with_prefix("web"));
        let results = v["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 4);
        assert_eq!(
            results[0],
            json!({
                "ruleId": "sql-injection", "ruleIndex": 1, "level": "error",
                "message": {"text": "error in src/auth/login.ts"},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": "web/src/auth/login.ts", "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 42, "endLine": 58}
                }}]
            })
        );
        assert_eq!(results[1]["ruleIndex"], 0);
        assert_eq!(results[1]["level"], "warning");
        assert_eq!(
            results[1]["locations"][0]["physicalLocation"]["region"],
            json!({"startLine": 7})
        );
        let no_region = &results[2]["locations"][0]["physicalLocation"];
        assert_eq!(no_region["artifactLocation"]["uri"], "web/src/a%20b/%C3%BCn%C3%AF.py");
        assert!(no_region.get("region").is_none());
        assert_eq!(results[2]["level"], "note");
        let outside = &results[3]["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(outside, &json!({"uri": "file:///outside/x.c"}));
    }

    #[test]
    fn no_findings_is_a_valid_empty_run() {
        let v = as_value(&[], &ArtifactBase::at_root());
        assert_eq!(v["runs"][0]["results"], json!([]));
        assert_eq!(v["runs"][0]["tool"]["driver"]["rules"], json!([]));
    }

    #[test]
    fn rlm_tool_info_carries_the_crate_version() {
        let t = ToolInfo::rlm();
        assert_eq!(t.name, "rlm");
        assert_eq!(t.version, env!("CARGO_PKG_VERSION"));
    }

    /// Rewrites every `pattern` of the schema's known-bad form; returns how many.
    fn escape_stray_bracket(schema: &mut Value) -> usize {
        const BAD: &str = "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$";
        match schema {
            Value::Object(map) => {
                let mut n = 0;
                for (key, value) in map.iter_mut() {
                    if key == "pattern" && value == BAD {
                        *value = json!(BAD.replace("}]", "}\\]"));
                        n += 1;
                    } else {
                        n += escape_stray_bracket(value);
                    }
                }
                n
            }
            Value::Array(items) => items.iter_mut().map(escape_stray_bracket).sum(),
            _ => 0,
        }
    }

    /// The generated log validates against the published SARIF 2.1.0 schema (a local copy:
    /// no network), for findings as a model writes them.
    #[test]
    fn generated_sarif_is_valid_against_the_schema() {
        let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/data/sarif-2.1.0-rtm.5.json");
        let mut schema: Value =
            serde_json::from_str(&fs_err::read_to_string(schema_path).expect("schema file")).expect("schema is JSON");
        // The published schema's `language` patterns have a stray `]`, which JavaScript reads
        // as a literal but the validator's meta-schema check rejects as a regex. Escaping it
        // keeps the meaning; rlm never writes `language`, so nothing we check depends on it.
        assert_eq!(escape_stray_bracket(&mut schema), 2, "the schema file changed");
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .build(&schema)
            .expect("schema compiles");
        let answer = r#"```json
{"findings": [
  {"path": "src/auth/login.ts", "line": 42, "end_line": 58, "severity": "critical", "message": "SQL built from input\nline two", "type": "sql-injection"},
  {"path": "src/auth/login.ts", "line": "n/a", "severity": "low", "message": "No JSDoc"},
  {"path": "/etc/passwd", "line": 1, "message": "outside"}
]}
```"#;
        let mut findings = crate::answer::read_findings(&crate::answer::json::json_values(answer), "src/auth/login.ts");
        findings.extend(sample());
        for (base, tool) in [
            (ArtifactBase::with_prefix("pkg dir"), tool()),
            (ArtifactBase::at_root(), ToolInfo::rlm()),
        ] {
            for set in [&findings[..], &[]] {
                let log: Value = serde_json::from_str(&to_json(set, &base, &tool)).unwrap();
                let errors: Vec<String> = validator
                    .iter_errors(&log)
                    .map(|e| format!("{e} at {}", e.instance_path()))
                    .collect();
                assert!(errors.is_empty(), "invalid SARIF: {errors:#?}\n{log:#}");
            }
        }
        // The validator does reject a broken log, so the check above means something.
        let mut broken: Value = serde_json::from_str(&to_json(&findings, &ArtifactBase::at_root(), &tool())).unwrap();
        broken["runs"][0]["results"][0]["level"] = json!("critical");
        assert!(!validator.is_valid(&broken));
    }
}
