//! Keeps the message of the last panic on each thread, so a crashed actor's supervisor can
//! show *why* it crashed. The hook runs on the panicking thread before unwinding starts;
//! the actor's mailbox pump, dropped during that unwinding on the same thread, collects it.

use std::cell::RefCell;
use std::sync::Once;

/// Longest panic message kept; the rest is cut so a panic that formats a large value
/// cannot flood the debug endpoint.
pub const MAX_PANIC_MESSAGE: usize = 256;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs the capturing hook once per process, in front of the existing hook (which
/// still prints the panic to stderr).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic with a non-string payload".to_string());
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(truncate(&format!("{msg}{at}"))));
            previous(info);
        }));
    });
}

/// Takes this thread's last panic message, if one was captured.
pub fn take() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}

pub fn truncate(s: &str) -> String {
    if s.len() <= MAX_PANIC_MESSAGE {
        return s.to_string();
    }
    let mut end = MAX_PANIC_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_and_truncates_the_message() {
        install();
        let long = "x".repeat(1000);
        let _ = std::panic::catch_unwind(|| panic!("{long}"));
        let got = take().unwrap();
        assert!(got.len() <= MAX_PANIC_MESSAGE + '…'.len_utf8());
        assert!(got.starts_with("xxx"));
        assert_eq!(take(), None, "taken once");
        assert_eq!(truncate("é".repeat(200).as_str()).chars().count(), 129);
    }
}
