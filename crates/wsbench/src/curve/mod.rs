//! The shape of a load curve, as pure arithmetic on measured points: where latency bends
//! against throughput ([`knee`], Kneedle) and what Gunther's Universal Scalability Law
//! makes of throughput against connections ([`usl`]: σ, κ, λ with their intervals, the
//! predicted peak, a hold-out check). It knows no files, runs nothing and names no
//! scenario: `sweep` hands it points and `result::sweep` keeps what it says.

pub mod knee;
pub mod usl;
