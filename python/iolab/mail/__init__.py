"""The mail benchmark around ``iolab mail serve``: Postfix's smtp-source and
smtp-sink, a private Postfix 3.7 instance as the third system, process I/O
accounting. The server itself is Rust (crates/iolab-mail)."""
