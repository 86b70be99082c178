//! The QoS 1 and 2 exchanges an MQTT session has open, each bounded so that a broker that
//! never answers grows nothing: the publishes it sent that await their PUBACK (QoS 1) or
//! their PUBREC and then PUBCOMP (QoS 2), and the QoS 2 deliveries it received that await
//! the broker's PUBREL, by which a delivery sent again before that release is told apart
//! and counted once.

use std::collections::VecDeque;

/// Publishes awaiting their acknowledgement that a session remembers; beyond, the oldest is
/// given up, counted as `mqtt_puback_missing` (QoS 1) or `mqtt_pubcomp_missing` (QoS 2).
pub const MAX_UNACKED: usize = 4096;

/// QoS 2 deliveries awaiting the broker's PUBREL that a session remembers (the broker's own
/// in-flight window is far smaller: mosquitto's is 20).
const MAX_UNRELEASED: usize = 4096;

/// A publish sent at QoS 1 or 2, not yet acknowledged.
#[derive(Debug, Clone, Copy)]
struct Sent {
    packet_id: u16,
    /// The echo request it carries.
    seq: Option<u64>,
}

/// The publishes a session sent that await their acknowledgement, oldest first.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    sent: VecDeque<Sent>,
    /// Publishes forgotten unacknowledged since the last report (beyond [`MAX_UNACKED`]).
    given_up: u64,
}

impl Outgoing {
    /// Publishes awaiting their acknowledgement.
    pub(super) fn len(&self) -> usize {
        self.sent.len()
    }

    /// `packet_id` sent (carrying echo request `seq`), to be acknowledged.
    pub(super) fn push(&mut self, packet_id: u16, seq: Option<u64>) {
        if self.sent.len() >= MAX_UNACKED {
            self.sent.pop_front();
            self.given_up += 1;
        }
        self.sent.push_back(Sent { packet_id, seq });
    }

    /// The exchange of `packet_id` is over (PUBACK, PUBCOMP, or a refusing PUBREC): the
    /// echo request it carried, `None` when no such publish is open.
    pub(super) fn finish(&mut self, packet_id: u16) -> Option<Option<u64>> {
        let at = self.sent.iter().position(|sent| sent.packet_id == packet_id)?;
        self.sent.remove(at).map(|sent| sent.seq)
    }

    /// Whether `packet_id` is open (a PUBREC for it is answered with PUBREL).
    pub(super) fn is_open(&self, packet_id: u16) -> bool {
        self.sent.iter().any(|sent| sent.packet_id == packet_id)
    }

    /// How many publishes were given up since it was last asked.
    pub(super) fn take_given_up(&mut self) -> u64 {
        std::mem::take(&mut self.given_up)
    }
}

/// The QoS 2 deliveries a session received and acknowledged with PUBREC, awaiting the
/// broker's PUBREL.
#[derive(Debug, Default)]
pub(super) struct Unreleased {
    packet_ids: VecDeque<u16>,
}

impl Unreleased {
    /// Delivery `packet_id` arrived: true the first time, false for the same delivery sent
    /// again before its PUBREL (not to be counted twice).
    pub(super) fn first_time(&mut self, packet_id: u16) -> bool {
        if self.packet_ids.contains(&packet_id) {
            return false;
        }
        if self.packet_ids.len() >= MAX_UNRELEASED {
            self.packet_ids.pop_front();
        }
        self.packet_ids.push_back(packet_id);
        true
    }

    /// The broker released `packet_id` (PUBREL): the identifier may carry a new delivery.
    pub(super) fn release(&mut self, packet_id: u16) {
        self.packet_ids.retain(|id| *id != packet_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publish_is_open_until_its_exchange_finishes_and_the_oldest_is_given_up_past_the_bound() {
        let mut outgoing = Outgoing::default();
        outgoing.push(1, Some(7));
        assert!(outgoing.is_open(1) && !outgoing.is_open(2));
        assert_eq!(outgoing.finish(1), Some(Some(7)));
        assert_eq!(outgoing.finish(1), None);
        for id in 0..=MAX_UNACKED as u16 {
            outgoing.push(id, None);
        }
        assert_eq!(outgoing.take_given_up(), 1);
        assert_eq!(outgoing.take_given_up(), 0);
        assert!(!outgoing.is_open(0) && outgoing.is_open(1));
    }

    #[test]
    fn a_qos_2_delivery_sent_again_before_its_release_counts_once() {
        let mut unreleased = Unreleased::default();
        assert!(unreleased.first_time(5));
        assert!(!unreleased.first_time(5), "the same delivery again");
        unreleased.release(5);
        assert!(unreleased.first_time(5), "a new delivery under the released identifier");
    }
}
