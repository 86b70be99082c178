//! Names for MQTT's return and reason codes, in snake_case so they can be counter names
//! (`not_authorized`, `failure`, …). MQTT 3.1.1 has its own small CONNACK and SUBACK tables;
//! MQTT 5 has one table of reason codes shared by every packet, where 0x00 means something
//! different in each packet. A code no table knows is `unknown`.

use super::Version;

/// The name of a CONNACK return code (3.1.1) or reason code (5). An MQTT 5 client may get a
/// 3.1.1 CONNACK from a broker that does not speak 5 (MQTT 5 §4.13), so 5's table falls back
/// to 3.1.1's codes 1–5.
pub fn connack_code_name(version: Version, code: u8) -> &'static str {
    match (version, code) {
        (_, 0) => "success",
        (_, 1) => "unacceptable_protocol_version",
        (_, 2) => "identifier_rejected",
        (_, 3) => "server_unavailable",
        (_, 4) => "bad_username_or_password",
        (_, 5) => "not_authorized",
        (Version::V311, _) => "unknown",
        (Version::V5, code) => reason_code_name(code),
    }
}

/// The name of a SUBACK code: the granted QoS, or why the subscription was refused.
pub fn suback_code_name(version: Version, code: u8) -> &'static str {
    match (version, code) {
        (_, 0) => "granted_qos_0",
        (_, 1) => "granted_qos_1",
        (_, 2) => "granted_qos_2",
        (Version::V311, 0x80) => "failure",
        (Version::V311, _) => "unknown",
        (Version::V5, code) => reason_code_name(code),
    }
}

/// The name of an MQTT 5 reason code as PUBACK, UNSUBACK and DISCONNECT use it (0x00 is
/// `success`; in DISCONNECT the specification calls it normal disconnection).
pub fn reason_code_name(code: u8) -> &'static str {
    match code {
        0x00 => "success",
        0x01 => "granted_qos_1",
        0x02 => "granted_qos_2",
        0x04 => "disconnect_with_will_message",
        0x10 => "no_matching_subscribers",
        0x11 => "no_subscription_existed",
        0x18 => "continue_authentication",
        0x19 => "re_authenticate",
        0x80 => "unspecified_error",
        0x81 => "malformed_packet",
        0x82 => "protocol_error",
        0x83 => "implementation_specific_error",
        0x84 => "unsupported_protocol_version",
        0x85 => "client_identifier_not_valid",
        0x86 => "bad_user_name_or_password",
        0x87 => "not_authorized",
        0x88 => "server_unavailable",
        0x89 => "server_busy",
        0x8A => "banned",
        0x8B => "server_shutting_down",
        0x8C => "bad_authentication_method",
        0x8D => "keep_alive_timeout",
        0x8E => "session_taken_over",
        0x8F => "topic_filter_invalid",
        0x90 => "topic_name_invalid",
        0x91 => "packet_identifier_in_use",
        0x92 => "packet_identifier_not_found",
        0x93 => "receive_maximum_exceeded",
        0x94 => "topic_alias_invalid",
        0x95 => "packet_too_large",
        0x96 => "message_rate_too_high",
        0x97 => "quota_exceeded",
        0x98 => "administrative_action",
        0x99 => "payload_format_invalid",
        0x9A => "retain_not_supported",
        0x9B => "qos_not_supported",
        0x9C => "use_another_server",
        0x9D => "server_moved",
        0x9E => "shared_subscriptions_not_supported",
        0x9F => "connection_rate_exceeded",
        0xA0 => "maximum_connect_time",
        0xA1 => "subscription_identifiers_not_supported",
        0xA2 => "wildcard_subscriptions_not_supported",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connack_codes_of_3_1_1_are_named() {
        let names: Vec<_> = (0..=6).map(|c| connack_code_name(Version::V311, c)).collect();
        assert_eq!(
            names,
            [
                "success",
                "unacceptable_protocol_version",
                "identifier_rejected",
                "server_unavailable",
                "bad_username_or_password",
                "not_authorized",
                "unknown"
            ]
        );
    }

    #[test]
    fn connack_codes_of_5_use_the_reason_table_and_3_1_1_fallbacks() {
        assert_eq!(connack_code_name(Version::V5, 0x87), "not_authorized");
        assert_eq!(connack_code_name(Version::V5, 0x84), "unsupported_protocol_version");
        assert_eq!(connack_code_name(Version::V5, 0x01), "unacceptable_protocol_version");
        assert_eq!(connack_code_name(Version::V5, 0x86), "bad_user_name_or_password");
    }

    #[test]
    fn suback_codes_are_named_per_version() {
        assert_eq!(suback_code_name(Version::V311, 0x80), "failure");
        assert_eq!(suback_code_name(Version::V311, 0x87), "unknown");
        assert_eq!(suback_code_name(Version::V5, 0x80), "unspecified_error");
        assert_eq!(suback_code_name(Version::V5, 0x87), "not_authorized");
        for version in [Version::V311, Version::V5] {
            assert_eq!(suback_code_name(version, 0), "granted_qos_0");
            assert_eq!(suback_code_name(version, 1), "granted_qos_1");
            assert_eq!(suback_code_name(version, 2), "granted_qos_2");
        }
    }

    #[test]
    fn every_reason_code_of_mqtt_5_has_its_own_name() {
        let known: Vec<u8> = (0..=255u8).filter(|&c| reason_code_name(c) != "unknown").collect();
        assert_eq!(known.len(), 43);
        let mut names: Vec<_> = known.iter().map(|&c| reason_code_name(c)).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), known.len(), "two codes share a name");
        assert!(
            names
                .iter()
                .all(|n| n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit()))
        );
        assert_eq!(reason_code_name(0x03), "unknown");
    }
}
