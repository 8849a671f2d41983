//! How a name that need not be UTF-8 (a file or directory name: the pattern, `-o`,
//! `--files-from`, …) is kept in a run's record, so that `rlm resume` reads back the very
//! bytes given: a string when it is UTF-8 (as every run has recorded it before), else
//! `{"bytes": [..]}`. serde's own form for an `OsString` is a platform-tagged enum even for
//! plain text, and a `PathBuf` that is not UTF-8 cannot be serialized at all.

use std::ffi::{OsStr, OsString};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One recorded name.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RecordedName {
    Text(String),
    Bytes { bytes: Vec<u8> },
}

impl RecordedName {
    fn of(name: &OsStr) -> RecordedName {
        match name.to_str() {
            Some(text) => RecordedName::Text(text.to_string()),
            None => RecordedName::Bytes {
                bytes: name.as_encoded_bytes().to_vec(),
            },
        }
    }

    fn into_name(self) -> Result<OsString, String> {
        match self {
            RecordedName::Text(text) => Ok(text.into()),
            #[cfg(unix)]
            RecordedName::Bytes { bytes } => {
                use std::os::unix::ffi::OsStringExt;
                Ok(OsString::from_vec(bytes))
            }
            #[cfg(not(unix))]
            RecordedName::Bytes { .. } => Err("a name recorded as bytes can only be read back on Unix".into()),
        }
    }
}

/// `#[serde(with = "recorded_name")]` for an `Option<OsString>` or an `Option<PathBuf>`.
#[allow(clippy::ref_option)] // the signature serde's `with` calls
pub fn serialize<S: Serializer, N: AsRef<OsStr>>(name: &Option<N>, serializer: S) -> Result<S::Ok, S::Error> {
    name.as_ref()
        .map(|n| RecordedName::of(n.as_ref()))
        .serialize(serializer)
}

pub fn deserialize<'de, D: Deserializer<'de>, N: From<OsString>>(deserializer: D) -> Result<Option<N>, D::Error> {
    Option::<RecordedName>::deserialize(deserializer)?
        .map(|r| r.into_name().map(N::from))
        .transpose()
        .map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Args {
        #[serde(with = "super", default)]
        name: Option<std::ffi::OsString>,
        #[serde(with = "super", default)]
        path: Option<std::path::PathBuf>,
    }

    #[test]
    fn text_stays_a_string_and_bytes_come_back() {
        let text = Args {
            name: Some("src/*.ts".into()),
            path: Some("out".into()),
        };
        let json = serde_json::to_value(&text).unwrap();
        assert_eq!(json, serde_json::json!({"name": "src/*.ts", "path": "out"}));
        assert_eq!(serde_json::from_value::<Args>(json).unwrap(), text);
        let none = Args { name: None, path: None };
        assert_eq!(serde_json::from_value::<Args>(serde_json::json!({})).unwrap(), none);
        assert_eq!(
            serde_json::from_value::<Args>(serde_json::to_value(&none).unwrap()).unwrap(),
            none
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let bytes = Args {
                name: Some(std::ffi::OsString::from_vec(b"src/x\xff.txt".to_vec())),
                path: Some(std::ffi::OsString::from_vec(b"out\xff".to_vec()).into()),
            };
            let json = serde_json::to_value(&bytes).unwrap();
            assert_eq!(json["name"]["bytes"][5], 255);
            assert_eq!(json["path"]["bytes"][3], 255);
            assert_eq!(serde_json::from_value::<Args>(json).unwrap(), bytes);
        }
    }
}
