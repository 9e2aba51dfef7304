//! Mail addresses: the vocabulary that sessions, delivery and Maildir
//! share, beneath all of them (issue 22: no import circle).

/// A local part that can name a Maildir folder safely.
pub(crate) fn mailbox_name(address: &str) -> Option<String> {
    let local = address.rsplit_once('@').map_or(address, |(l, _)| l).to_ascii_lowercase();
    let ok = !local.is_empty()
        && local.len() <= 64
        && !local.starts_with('.')
        && local.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b));
    ok.then_some(local)
}

#[cfg(test)]
mod tests {
    use super::mailbox_name;

    #[test]
    fn mailbox_names_are_safe_path_components() {
        assert_eq!(mailbox_name("Alice@example.org").as_deref(), Some("alice"));
        assert_eq!(mailbox_name("bob+tag").as_deref(), Some("bob+tag"));
        for bad in ["../etc@x", "a/b@x", ".hidden@x", "@x", "a b@x"] {
            assert_eq!(mailbox_name(bad), None, "{bad}");
        }
    }
}
