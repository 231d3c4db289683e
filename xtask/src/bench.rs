//! `cargo xtask bench`: run the suite, compare with the targets, report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::SystemTime;

use serde_json::{Value, json};

use crate::targets::{relative_for, target_for};

/// Command-line options.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    /// A shortened suite for a smoke check.
    pub(crate) quick: bool,
    /// Only scenarios whose id matches (a criterion filter; a substring for the others).
    pub(crate) filter: Option<String>,
}

impl Options {
    pub(crate) fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => options.quick = true,
                "--filter" => {
                    options.filter = Some(args.next().ok_or("--filter needs a value")?.clone());
                }
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        Ok(options)
    }
}

/// One measured scenario.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Measured {
    pub(crate) scenario: String,
    /// The median (or the statistic the scenario reports), in `unit`s.
    pub(crate) value: f64,
    pub(crate) unit: Unit,
    /// For scenarios compared with another measurement instead of a fixed target.
    pub(crate) relative_target: Option<f64>,
    /// What a relative target stands for, when the report says.
    pub(crate) why: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Nanoseconds,
    Allocations,
}

/// A scenario with its target and verdict.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) measured: Measured,
    pub(crate) target: Option<f64>,
    pub(crate) why: Option<String>,
    pub(crate) met: Option<bool>,
}

pub(crate) fn run(root: &Path, options: &Options) -> ExitCode {
    let started = SystemTime::now();
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let mut command = crate::workspace::cargo();
    // Criterion finds its output directory through `cargo metadata` unless told; tell it, so
    // results always land where they are read back.
    command.current_dir(root).env("CARGO_TARGET_DIR", &target_dir).args([
        "bench",
        "-p",
        "curator-benches",
        "--benches",
        "--",
    ]);
    if let Some(filter) = &options.filter {
        command.arg(filter);
    }
    if options.quick {
        command
            .args(["--warm-up-time", "0.2", "--measurement-time", "0.5"])
            .env("CURATOR_BENCH_QUICK", "1");
    }
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!("cargo bench failed: {status}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("cannot run cargo bench: {e}");
            return ExitCode::FAILURE;
        }
    }
    let target_dir =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    if options
        .filter
        .as_ref()
        .is_none_or(|f| "python/".contains(f.as_str()) || f.starts_with("python"))
    {
        run_python(root, &target_dir.join("curator-bench"), options.quick);
    }
    let mut measured = match collect_criterion(&target_dir.join("criterion"), started) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("reading criterion's results: {e}");
            return ExitCode::FAILURE;
        }
    };
    match collect_custom(&target_dir.join("curator-bench"), started) {
        Ok(custom) => {
            measured.extend(custom.into_iter().filter(|m| {
                options.filter.as_ref().is_none_or(|f| m.scenario.contains(f.as_str()))
            }));
        }
        Err(e) => {
            eprintln!("reading the loop and allocation reports: {e}");
            return ExitCode::FAILURE;
        }
    }
    let rows = evaluate(measured);
    println!("{}", table(&rows));
    let report = report(&rows, root);
    let path = target_dir.join("bench-report.json");
    if let Err(e) = std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap_or_default())
    {
        eprintln!("cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    println!("report: {}", path.display());
    exit_code(&rows)
}

/// Reads criterion's median estimates written since `since`.
pub(crate) fn collect_criterion(dir: &Path, since: SystemTime) -> Result<Vec<Measured>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let is_new_estimate = path.file_name().is_some_and(|n| n == "estimates.json")
                && path.parent().and_then(Path::file_name).is_some_and(|n| n == "new");
            let fresh = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= since);
            if !is_new_estimate || !fresh {
                continue;
            }
            let read = |p: &Path| -> Result<Value, String> {
                let text =
                    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
            };
            let estimates = read(&path)?;
            let benchmark = read(&path.with_file_name("benchmark.json"))?;
            let scenario = benchmark["full_id"]
                .as_str()
                .ok_or_else(|| format!("{}: no full_id", path.display()))?;
            let median = estimates["median"]["point_estimate"]
                .as_f64()
                .ok_or_else(|| format!("{}: no median", path.display()))?;
            out.push(Measured {
                scenario: scenario.to_owned(),
                value: median,
                unit: Unit::Nanoseconds,
                relative_target: None,
                why: None,
            });
        }
    }
    out.sort_by(|a, b| a.scenario.cmp(&b.scenario));
    Ok(out)
}

/// Reads the reports of the benches that compute their own statistics (loop overhead
/// percentiles, allocation counts), when written since `since`.
pub(crate) fn collect_custom(dir: &Path, since: SystemTime) -> Result<Vec<Measured>, String> {
    let fresh =
        |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).is_ok_and(|t| t >= since);
    let read = |p: &Path| -> Result<Value, String> {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
    };
    let mut out = Vec::new();
    let loops = dir.join("loop.json");
    if fresh(&loops) {
        for row in read(&loops)?.as_array().into_iter().flatten() {
            let (store, history) =
                (row["store"].as_str().unwrap_or("?"), row["history"].as_u64().unwrap_or(0));
            for stat in ["p50", "p99"] {
                out.push(Measured {
                    scenario: format!("loop/{store}/{history}/{stat}"),
                    value: row[format!("{stat}_ns")].as_f64().unwrap_or(f64::NAN),
                    unit: Unit::Nanoseconds,
                    relative_target: None,
                    why: None,
                });
            }
        }
    }
    let conversations = dir.join("conversation.json");
    if fresh(&conversations) {
        for row in read(&conversations)?.as_array().into_iter().flatten() {
            let (scenario, history) =
                (row["scenario"].as_str().unwrap_or("?"), row["history"].as_u64().unwrap_or(0));
            for stat in ["p50", "p99", "wall_p50", "wall_p99", "cpu_p50", "cpu_p99"] {
                if row.get(format!("{stat}_ns")).is_none() {
                    continue;
                }
                out.push(Measured {
                    scenario: format!("conversation/{scenario}/{history}/{stat}"),
                    value: row[format!("{stat}_ns")].as_f64().unwrap_or(f64::NAN),
                    unit: Unit::Nanoseconds,
                    relative_target: None,
                    why: None,
                });
            }
        }
    }
    let allocations = dir.join("allocations.json");
    if fresh(&allocations) {
        for row in read(&allocations)?.as_array().into_iter().flatten() {
            let strategy = row["strategy"].as_str().unwrap_or("?");
            // Allocations must not grow with the length of kept contents: the long history
            // may allocate no more blocks than the short one.
            out.push(Measured {
                scenario: format!("alloc/{strategy}/10k/blocks_with_10x_contents"),
                value: row["long"]["blocks"].as_f64().unwrap_or(f64::NAN),
                unit: Unit::Allocations,
                relative_target: row["short"]["blocks"].as_f64(),
                why: None,
            });
        }
    }
    for name in [
        "python.json",
        "python_pair_safe.json",
        "python_session.json",
        "python_shorten.json",
        "python_agents.json",
    ] {
        let path = dir.join(name);
        if !fresh(&path) {
            continue;
        }
        // The Python benchmarks (benches/python): each row its median and, where the
        // issue sets one, a target relative to the Python library measured in the same run.
        for row in read(&path)?.as_array().into_iter().flatten() {
            out.push(Measured {
                scenario: row["scenario"].as_str().unwrap_or("?").to_owned(),
                value: row["median_ns"].as_f64().unwrap_or(f64::NAN),
                unit: Unit::Nanoseconds,
                relative_target: row["target_ns"].as_f64(),
                why: row["why"].as_str().map(str::to_owned),
            });
        }
    }
    Ok(out)
}

/// Runs the Python benchmarks (`benches/python/run.sh`) when a `python3` is found; they write
/// their reports where [`collect_custom`] reads them. A failure is reported, not fatal: the
/// Rust suite's results still count.
fn run_python(root: &Path, out: &Path, quick: bool) {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let found = std::process::Command::new(&python)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("no {python}: the Python benchmarks (benches/python) are left out");
        return;
    }
    let mut command = std::process::Command::new("bash");
    command.current_dir(root).arg(root.join("benches/python/run.sh")).arg(out);
    if quick {
        command.arg("--quick");
    }
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => eprintln!("the Python benchmarks failed: {status}"),
        Err(e) => eprintln!("cannot run the Python benchmarks: {e}"),
    }
}

/// Attaches targets and verdicts.
pub(crate) fn evaluate(measured: Vec<Measured>) -> Vec<Row> {
    // Scenarios with a target relative to another one of the same run get it here.
    let medians: std::collections::HashMap<String, f64> =
        measured.iter().map(|m| (m.scenario.clone(), m.value)).collect();
    measured
        .into_iter()
        .map(|mut m| {
            if m.relative_target.is_none()
                && let Some(relative) = relative_for(&m.scenario)
                && let Some(of) = medians.get(relative.of)
            {
                m.relative_target = Some(relative.ratio * of);
                m.why = Some(format!(
                    "within {}x of `{}`: {}",
                    relative.ratio, relative.of, relative.why
                ));
            }
            let fixed = target_for(&m.scenario);
            let target = m.relative_target.or(fixed.map(|t| t.max_ns));
            let why = if m.why.is_some() {
                m.why.clone()
            } else if m.relative_target.is_some() {
                Some("no more than with short contents".to_owned())
            } else {
                fixed.map(|t| t.why.to_owned())
            };
            let met = target.map(|t| m.value <= t);
            Row { measured: m, target, why, met }
        })
        .collect()
}

/// Non-zero when a target was missed.
pub(crate) fn exit_code(rows: &[Row]) -> ExitCode {
    if rows.iter().any(|r| r.met == Some(false)) { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn human(value: f64, unit: Unit) -> String {
    match unit {
        Unit::Allocations => format!("{value:.0} allocs"),
        Unit::Nanoseconds if value >= 1e6 => format!("{:.2} ms", value / 1e6),
        Unit::Nanoseconds if value >= 1e3 => format!("{:.1} µs", value / 1e3),
        Unit::Nanoseconds => format!("{value:.0} ns"),
    }
}

/// The table printed to the terminal (and pasted into docs/benchmarks.md).
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = String::from("| scenario | median | target | met |\n|---|---:|---:|---|\n");
    for row in rows {
        let m = &row.measured;
        let target =
            row.target.map_or_else(|| "-".to_owned(), |t| format!("≤ {}", human(t, m.unit)));
        let met = match row.met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "",
        };
        let _ = writeln!(out, "| {} | {} | {target} | {met} |", m.scenario, human(m.value, m.unit));
    }
    let missed = rows.iter().filter(|r| r.met == Some(false)).count();
    let checked = rows.iter().filter(|r| r.met.is_some()).count();
    let _ = write!(out, "\n{} scenarios, {checked} with targets, {missed} missed", rows.len());
    out
}

/// The JSON report: the machine, the commit, and every row.
pub(crate) fn report(rows: &[Row], root: &Path) -> Value {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let nproc = std::thread::available_parallelism().map_or(0, usize::from);
    json!({
        "nproc": nproc,
        "commit": commit,
        "scenarios": rows.iter().map(|r| {
            let ns = r.measured.unit == Unit::Nanoseconds;
            json!({
                "scenario": r.measured.scenario,
                "median_ns": if ns { Some(r.measured.value) } else { None },
                "target_ns": if ns { r.target } else { None },
                "value": r.measured.value,
                "target": r.target,
                "unit": if ns { "ns" } else { "allocations" },
                "why": r.why,
                "met": r.met,
            })
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake criterion result directory with one estimate.
    fn fabricate(root: &Path, id: &str, median_ns: f64) {
        let dir = root.join("criterion").join(id).join("new");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("estimates.json"),
            json!({"median": {"point_estimate": median_ns}}).to_string(),
        )
        .unwrap();
        std::fs::write(dir.join("benchmark.json"), json!({"full_id": id}).to_string()).unwrap();
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_missed_target_fails_the_command() {
        let dir = temp("missed");
        fabricate(&dir, "strategy/sliding_window/10k", 25_000.0);
        fabricate(&dir, "strategy/truncate_turns/10k", 4_000.0);
        let rows =
            evaluate(collect_criterion(&dir.join("criterion"), SystemTime::UNIX_EPOCH).unwrap());
        let verdicts: Vec<_> = rows.iter().map(|r| (r.measured.scenario.as_str(), r.met)).collect();
        assert_eq!(
            verdicts,
            [
                ("strategy/sliding_window/10k", Some(false)),
                ("strategy/truncate_turns/10k", Some(true))
            ]
        );
        assert_eq!(exit_code(&rows), ExitCode::FAILURE);
        assert!(
            table(&rows).contains("| strategy/sliding_window/10k | 25.0 µs | ≤ 10.0 µs | MISSED |")
        );
        let report = report(&rows, Path::new("."));
        assert_eq!(report["scenarios"][0]["met"], json!(false));
        assert_eq!(report["scenarios"][0]["target_ns"], json!(10_000.0));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn met_targets_and_untargeted_scenarios_pass() {
        let dir = temp("met");
        fabricate(&dir, "strategy/sliding_window/100k", 4_000.0);
        fabricate(&dir, "strategy/passthrough/100", 1_000.0);
        let rows =
            evaluate(collect_criterion(&dir.join("criterion"), SystemTime::UNIX_EPOCH).unwrap());
        assert_eq!(exit_code(&rows), ExitCode::SUCCESS);
        assert_eq!(rows.iter().filter(|r| r.met.is_none()).count(), 1);
        // Results older than the run are not reported.
        assert!(
            collect_criterion(
                &dir.join("criterion"),
                SystemTime::now() + std::time::Duration::from_mins(1)
            )
            .unwrap()
            .is_empty()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_target_relative_to_another_scenario_takes_its_median_from_the_same_run() {
        let dir = temp("relative");
        fabricate(&dir, "session/sqlite_loop/token_budget/10k", 40_000.0);
        fabricate(&dir, "session/sqlite_loop/default_pipeline/10k", 90_000.0);
        fabricate(&dir, "session/sqlite_loop/token_budget/100k", 50_000.0);
        fabricate(&dir, "session/sqlite_loop/default_pipeline/100k", 95_000.0);
        let rows =
            evaluate(collect_criterion(&dir.join("criterion"), SystemTime::UNIX_EPOCH).unwrap());
        let verdict = |id: &str| {
            rows.iter().find(|r| r.measured.scenario == id).map(|r| (r.target, r.met)).unwrap()
        };
        assert_eq!(
            verdict("session/sqlite_loop/default_pipeline/10k"),
            (Some(80_000.0), Some(false))
        );
        assert_eq!(
            verdict("session/sqlite_loop/default_pipeline/100k"),
            (Some(100_000.0), Some(true))
        );
        assert_eq!(exit_code(&rows), ExitCode::FAILURE);
        let report = report(&rows, Path::new("."));
        let why = report["scenarios"][0]["why"].as_str().unwrap();
        assert!(why.starts_with("within 2x of `session/sqlite_loop/token_budget/100k`"), "{why}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn custom_reports_become_rows_with_relative_targets() {
        let dir = temp("custom");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("loop.json"),
            json!([{"store": "sqlite", "history": 1000, "iterations": 500, "p50_ns": 90_000, "p99_ns": 2_500_000}]).to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.join("allocations.json"),
            json!([{"strategy": "sliding_window", "short": {"blocks": 10}, "long": {"blocks": 12}}]).to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.join("conversation.json"),
            json!([{"scenario": "truncate_tokens_template", "history": 10000, "iterations": 500, "p50_ns": 40_000, "p99_ns": 250_000}]).to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.join("python.json"),
            json!([
                {"scenario": "python/trim_dicts/10000", "median_ns": 450_000.0, "target_ns": 900_000.0, "why": "50x LangChain's trim_messages"},
                {"scenario": "python/curate_default/10000", "median_ns": 4.0e8},
            ])
            .to_string(),
        )
        .unwrap();
        let rows = evaluate(collect_custom(&dir, SystemTime::UNIX_EPOCH).unwrap());
        let verdicts: Vec<_> = rows.iter().map(|r| (r.measured.scenario.as_str(), r.met)).collect();
        assert_eq!(
            verdicts,
            [
                ("loop/sqlite/1000/p50", Some(true)),
                ("loop/sqlite/1000/p99", Some(false)),
                ("conversation/truncate_tokens_template/10000/p50", Some(true)),
                ("conversation/truncate_tokens_template/10000/p99", Some(false)),
                ("alloc/sliding_window/10k/blocks_with_10x_contents", Some(false)),
                ("python/trim_dicts/10000", Some(true)),
                ("python/curate_default/10000", None),
            ]
        );
        assert_eq!(rows[5].why.as_deref(), Some("50x LangChain's trim_messages"));
        assert_eq!(exit_code(&rows), ExitCode::FAILURE);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn options_parse() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            Options::parse(&args(&["--quick", "--filter", "sqlite"])).unwrap(),
            Options { quick: true, filter: Some("sqlite".into()) }
        );
        assert!(Options::parse(&args(&["--fast"])).is_err());
        assert!(Options::parse(&args(&["--filter"])).is_err());
    }
}
