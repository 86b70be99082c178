//! Settings handed from a parent to its child as data: serialized with serde as JSON, written
//! to the child's stdin by the parent ([`crate::Launch::this_program`]) and read back by the
//! child ([`read_settings`]). The same serde derive writes and reads every field, so no
//! setting can be lost on the way, and nothing is left on disk or in the process table.
//! JSON, not TOML: it holds every integer the settings may carry (`usize::MAX` included).

use std::io::Read;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Error;

/// The hidden flag (without its `--`) of a subcommand started as a child: its settings come
/// on stdin, not from flags.
pub const SETTINGS_FLAG: &str = "settings-from-stdin";

/// `settings` as the bytes a child reads with [`read_settings`].
pub fn encode_settings<T: Serialize>(settings: &T) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(settings)
}

/// A child's settings, read from `input` (its stdin) to the end.
pub fn read_settings<T: DeserializeOwned>(mut input: impl Read) -> Result<T, Error> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes).map_err(Error::ReadSettings)?;
    serde_json::from_slice(&bytes).map_err(Error::ParseSettings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Example {
        name: String,
        limit: usize,
        token: Option<String>,
    }

    #[test]
    fn settings_read_back_as_written() {
        let given = Example { name: "a \"quoted\"\nname".into(), limit: usize::MAX, token: Some("t".into()) };
        let bytes = encode_settings(&given).unwrap();
        assert_eq!(read_settings::<Example>(bytes.as_slice()).unwrap(), given);
    }

    #[test]
    fn settings_of_another_kind_are_refused_with_the_flag_named() {
        let error = read_settings::<Example>(&b"{\"port\": 1}"[..]).unwrap_err();
        assert!(matches!(error, Error::ParseSettings(_)), "{error:?}");
        assert!(error.to_string().contains("--settings-from-stdin is for wsbench's own"), "{error}");
    }
}
