//! Keeps the message of the last panic on each thread, so a crashed actor's supervisor can
//! show *why* it crashed. The hook runs on the panicking thread before unwinding starts;
//! the actor's mailbox pump, dropped during that unwinding on the same thread, collects it.
//!
//! A panic in an actor's handler is caught (its task ends and its supervisor restarts
//! it), so its backtrace, when enabled, is symbolized and printed by a thread of its own:
//! std's hook does that on the panicking thread, and the first symbolization of a large
//! binary stalls every actor on that thread for 0.3-1.7 s.

use std::backtrace::{Backtrace, BacktraceStatus};
use std::cell::{Cell, RefCell};
use std::panic::PanicHookInfo;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Once, OnceLock};

/// Longest panic message kept; the rest is cut so a panic that formats a large value
/// cannot flood the debug endpoint.
pub const MAX_PANIC_MESSAGE: usize = 256;

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    static IN_ACTOR: Cell<bool> = const { Cell::new(false) };
}

/// While it lives, this thread runs an actor's handlers: a panic here is caught.
pub(crate) struct InActor(bool);

impl InActor {
    pub(crate) fn enter() -> Self {
        Self(IN_ACTOR.replace(true))
    }
}

impl Drop for InActor {
    fn drop(&mut self) {
        IN_ACTOR.set(self.0);
    }
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
            if IN_ACTOR.get() {
                report_apart(info, &msg);
            } else {
                previous(info);
            }
        }));
    });
}

/// What std's hook prints, with the backtrace (captured here, unresolved) handed to the
/// printing thread.
fn report_apart(info: &PanicHookInfo<'_>, msg: &str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("<unnamed>");
    let at = info.location().map(|l| l.to_string()).unwrap_or_default();
    eprintln!("\nthread '{name}' panicked at {at}:\n{msg}");
    let trace = Backtrace::capture();
    if trace.status() != BacktraceStatus::Captured {
        return;
    }
    let unsent = match printer() {
        Some(p) => p.send(trace).err().map(|e| e.0),
        None => Some(trace),
    };
    if let Some(trace) = unsent {
        eprintln!("stack backtrace:\n{trace}");
    }
}

fn printer() -> Option<&'static Sender<Backtrace>> {
    static PRINTER: OnceLock<Option<Sender<Backtrace>>> = OnceLock::new();
    PRINTER
        .get_or_init(|| {
            let (tx, rx) = channel::<Backtrace>();
            std::thread::Builder::new()
                .name("panic-backtraces".into())
                .spawn(move || {
                    for trace in rx {
                        // Symbolized before stderr is locked: other threads log there.
                        let text = trace.to_string();
                        eprintln!("stack backtrace of the actor's panic above:\n{text}");
                    }
                })
                .ok()
                .map(|_| tx)
        })
        .as_ref()
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

    #[test]
    fn an_actor_s_panic_is_captured_too_and_the_mark_ends_with_its_guard() {
        install();
        {
            let _in = InActor::enter();
            assert!(IN_ACTOR.get());
            let _ = std::panic::catch_unwind(|| panic!("in a handler"));
            assert!(take().unwrap().starts_with("in a handler at "));
            let nested = InActor::enter();
            drop(nested);
            assert!(IN_ACTOR.get(), "an inner guard restores the outer mark");
        }
        assert!(!IN_ACTOR.get());
    }
}
