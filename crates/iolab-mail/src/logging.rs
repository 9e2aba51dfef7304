//! The log writer: one line per event on stderr, as Postfix writes its
//! mail log (docs/mail.md, "Logs"). The events are `tracing` events whose
//! target names the Postfix program that would write the line (`smtpd`,
//! `qmgr`, `delivery` for smtp(8)/local(8), `bounce`, `master`), so a
//! program embedding the server can route them with its own subscriber
//! instead.

/// Installs the stderr writer for the whole process at level INFO; does
/// nothing if a subscriber is installed already.
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .with_target(true)
        .try_init();
}
