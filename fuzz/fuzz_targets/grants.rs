//! A permission as `zot ext grant -p` reads it, and an `http` entry with a request: read
//! back as themselves; an entry allows only its own scheme, port and host
//! (`zot_host::fuzzing::permission`, `host_pattern`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, &str, bool, &str, u16)| {
    let (permission, entry, https, host, port) = input;
    zot_host::fuzzing::permission(permission);
    let scheme = if https { "https" } else { "http" };
    zot_host::fuzzing::host_pattern(entry, scheme, host, port);
});
