//! Ctrl-C (SIGINT) and SIGTERM as a flag: the first one asks every running loop to stop and
//! write what it measured; a second one ends the process at once with the interrupted exit
//! code. Installed once, by the binary, for every command.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Installs the handlers and returns the flag they set.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    let interrupt = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first: it fires only when the flag is already set (the second signal).
        signal_hook::flag::register_conditional_shutdown(
            signal,
            i32::from(crate::exit::INTERRUPTED),
            interrupt.clone(),
        )?;
        signal_hook::flag::register(signal, interrupt.clone())?;
    }
    Ok(interrupt)
}
