//! The NBD protocol, server side: what QEMU's NBD client (and libnbd,
//! nbd-client) need to use the emulated disk. Written from the protocol's
//! own document (NetworkBlockDevice/nbd `doc/proto.md`): the fixed newstyle
//! handshake with NBD_OPT_GO/INFO/EXPORT_NAME/LIST/ABORT, simple replies,
//! and the commands READ, WRITE (with FUA), FLUSH, TRIM, WRITE_ZEROES
//! (with NO_HOLE) and DISC. Not offered: TLS, structured replies (so no
//! block status), NBD_CMD_CACHE, fast zero, multi-connection consistency.

pub mod handshake;
pub mod proto;
pub mod request;
