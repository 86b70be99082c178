//! `--max-message` and `--max-message-memory`: the budget for messages still arriving (one
//! connection's, and the whole process's), checked and defaulted here so that the largest
//! message a run sends always fits its own echo.

use super::Payload;
use super::bounds;
use super::error::{ConfigError, invalid};
use super::settings::RunSettings;
use crate::units::parse_bytes;

impl RunSettings {
    /// `--max-message` and `--max-message-memory`, each bounded; by default 128 MiB (or the
    /// largest message the run sends, whose echo must fit) and 1 GiB (or `--max-message`).
    pub(super) fn message_limits(&self, payload: &Payload) -> Result<(u64, u64), ConfigError> {
        let size =
            |setting: &'static str, text: &Option<String>, max: u64| -> Result<Option<u64>, ConfigError> {
                let Some(text) = text else { return Ok(None) };
                let bytes = parse_bytes(text).map_err(|e| invalid(setting, e.problem))?;
                if bytes == 0 {
                    return Err(invalid(setting, format!("`{text}`: give a size above zero")));
                }
                bounds::at_most(setting, bytes, max, "bytes").map(Some)
            };
        let max_message = size("max-message", &self.max_message, bounds::MAX_PAYLOAD_BYTES)?
            .unwrap_or_else(|| wsbench_proto::DEFAULT_MAX_MESSAGE.max(payload.largest_message()));
        let memory = size("max-message-memory", &self.max_message_memory, bounds::MAX_MESSAGE_MEMORY)?
            .unwrap_or_else(|| wsbench_server::DEFAULT_MAX_MESSAGE_MEMORY.max(max_message));
        Ok((max_message, memory))
    }
}
