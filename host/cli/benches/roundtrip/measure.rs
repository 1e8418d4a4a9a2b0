//! Figures: percentiles, the median over rounds, and the tables and targets that print
//! them.

use std::time::Duration;

/// A row's p50 and p99, in µs.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    pub p50: f64,
    pub p99: f64,
}

impl Figure {
    /// p50 and p99 of `samples` (nearest rank: with five samples, the median and the
    /// largest).
    pub fn of(mut samples: Vec<Duration>) -> Figure {
        samples.sort();
        let at = |q: f64| {
            let rank = (q * samples.len() as f64).ceil() as usize;
            samples[rank.max(1) - 1].as_secs_f64() * 1e6
        };
        Figure {
            p50: at(0.50),
            p99: at(0.99),
        }
    }

    /// The median over rounds of each round's p50, and of each round's p99.
    pub fn median_of_rounds(rounds: Vec<Vec<Duration>>) -> Figure {
        let figures: Vec<Figure> = rounds.into_iter().map(Figure::of).collect();
        let median = |pick: fn(&Figure) -> f64| {
            let mut v: Vec<f64> = figures.iter().map(pick).collect();
            v.sort_by(f64::total_cmp);
            v[(v.len() - 1) / 2]
        };
        Figure {
            p50: median(|f| f.p50),
            p99: median(|f| f.p99),
        }
    }
}

/// One printed row: its ratios are against the table's first row and, when `against`
/// names another row (by index), against that one too.
pub struct Line {
    pub label: String,
    pub figure: Figure,
    pub against: Option<usize>,
}

impl Line {
    pub fn new(label: impl Into<String>, figure: Figure) -> Line {
        Line {
            label: label.into(),
            figure,
            against: None,
        }
    }

    /// With its ratios against row `index` printed as well.
    pub fn against(self, index: usize) -> Line {
        Line {
            against: Some(index),
            ..self
        }
    }
}

pub fn table(title: &str, lines: &[Line]) {
    println!("\n{title}");
    println!(
        "{:<36} {:>10} {:>10} {:>8} {:>8}",
        "", "p50 µs", "p99 µs", "p50 ×", "p99 ×"
    );
    let base = lines[0].figure;
    for line in lines {
        let f = line.figure;
        print!(
            "{:<36} {:>10.1} {:>10.1} {:>7.2}x {:>7.2}x",
            line.label,
            f.p50,
            f.p99,
            f.p50 / base.p50,
            f.p99 / base.p99
        );
        if let Some(other) = line.against {
            let o = &lines[other];
            print!(
                "   {:.2}x / {:.2}x vs {}",
                f.p50 / o.figure.p50,
                f.p99 / o.figure.p99,
                o.label
            );
        }
        println!();
    }
}

/// Prints `PASS` or `MISS` for `what` (a ratio) against its `limit`.
pub fn target(what: &str, ratio: f64, limit: f64) {
    let verdict = if ratio <= limit { "PASS" } else { "MISS" };
    println!("{verdict}  {what:<44} {ratio:>6.2}x");
}
