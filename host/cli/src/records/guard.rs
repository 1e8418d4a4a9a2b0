//! Whether a guard fails closed, in words (`guard`, `info`).

use zot_host::manage::records::guard::Failure;

/// How a guard fails, in a sentence's end.
pub(crate) fn failure_words(failure: &Failure) -> String {
    match failure {
        Failure::Open => "fails open: a tool call it cannot answer (no answer in time, an \
                          exit, not running) is allowed, as the protocol says"
            .to_string(),
        Failure::Closed => "fails closed: a tool call it cannot answer (no answer in time, an \
                            exit, not running) is blocked, the reason naming it"
            .to_string(),
        Failure::Unreadable(why) => format!(
            "fails closed: its guard record cannot be read ({why}), which counts as failing \
             closed"
        ),
    }
}
