//! The interception chain's cost: `Host::intercept` of a `tool_call` event with 0, 1 and 3
//! extensions intercepting it (the native `scenario` guest, which allows `echo`).

use crate::interleave::{self, Row};
use crate::library::{InHost, Op};
use crate::measure::{table, Line};
use crate::Bench;
use serde_json::json;
use zot_test_guests::COMMAND_NATIVE;

pub fn overhead(b: &Bench) {
    const COUNTS: [usize; 3] = [0, 1, 3];
    let mut rows: Vec<Box<dyn Row>> = COUNTS
        .iter()
        .map(|&count| {
            let exts: Vec<_> = (0..count)
                .map(|i| {
                    let name = format!("intercept-{count}-{i}");
                    b.ext(&name, json!({"name": name, "exec": COMMAND_NATIVE}))
                })
                .collect();
            Box::new(InHost::new(b.rt.handle(), &b.home(), &exts, Op::Intercept)) as Box<dyn Row>
        })
        .collect();
    let plan = b.plan();
    let f = interleave::medians(&mut rows, plan);
    table(
        &format!(
            "intercept a tool_call event, every interceptor allowing; median of {} \
             interleaved rounds of {} calls",
            plan.rounds, plan.calls
        ),
        &[
            Line::new("0 interceptors (baseline)", f[0]),
            Line::new("1 interceptor", f[1]),
            Line::new("3 interceptors", f[2]),
        ],
    );
    let per = |i: usize| (f[i].p50 - f[0].p50) / COUNTS[i] as f64;
    println!(
        "per interceptor (p50 above the baseline, divided): {:.1} µs with 1, {:.1} µs with 3",
        per(1),
        per(2)
    );
}
