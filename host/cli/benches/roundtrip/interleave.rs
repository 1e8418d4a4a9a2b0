//! Interleaved runs: every row of a table takes its turn in each round, so the noise of
//! a shared machine falls on all rows alike.

use crate::measure::Figure;
use std::time::Duration;

/// Something measured: `run(n)` makes `n` timed operations and returns their times.
pub trait Row {
    fn run(&mut self, n: usize) -> Vec<Duration>;
}

impl<F: FnMut(usize) -> Vec<Duration>> Row for F {
    fn run(&mut self, n: usize) -> Vec<Duration> {
        self(n)
    }
}

/// How a table is run: `rounds` rounds of `calls` timed operations per row, each after
/// `warmup` untimed ones.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: usize,
    pub calls: usize,
    pub warmup: usize,
}

/// Runs the rows in turn, round after round (every other round in reverse order, so no
/// row always follows the same one); each row's samples, per round.
pub fn run(rows: &mut [Box<dyn Row>], plan: Plan) -> Vec<Vec<Vec<Duration>>> {
    let mut samples = vec![Vec::with_capacity(plan.rounds); rows.len()];
    for round in 0..plan.rounds {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            rows[i].run(plan.warmup);
            samples[i].push(rows[i].run(plan.calls));
        }
    }
    samples
}

/// Runs the rows as [`run`] does; each row's median over rounds of its p50 and p99.
pub fn medians(rows: &mut [Box<dyn Row>], plan: Plan) -> Vec<Figure> {
    run(rows, plan)
        .into_iter()
        .map(Figure::median_of_rounds)
        .collect()
}
