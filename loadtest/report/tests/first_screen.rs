//! The report's first screen, from rounds made here (a demo's four mixes, three repeats each, with
//! the rates of a real one): its text opens with one sentence per mix, then the chart of every
//! repeat, and folds the reasoning; and in a real browser, headless Chromium at 1280 × 800 (a
//! screenshot, and `--dump-dom` of the page with a small script that writes where things landed
//! into it), the sentences and the chart are on the first screen, the chart at least 900 px wide
//! with every repeat's dot inside it, and the page does not scroll sideways. Chromium is
//! `CHROMIUM`, else `chromium` on the PATH; without it that test fails and says how to install it
//! (`bash scripts/chromium.sh install`, which scripts/test.sh runs before the tests).

use orders_bench_model::cpu::{CpuReport, Limit, LimitKind};
use orders_bench_model::fairness::Fairness;
use orders_bench_model::generator::Latency;
use orders_bench_model::result::{DataSet, Machine, RatePlan, RepeatResult, RoundResult, TargetResult};
use orders_bench_model::verdict::{MaxRate, PassMark, RateSummary};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A target's result: passed `rate`; `None`: it never failed.
fn target(rate: u32, failed: bool) -> TargetResult {
    TargetResult {
        steps: Vec::new(),
        max_rate: MaxRate { rate, first_failed_rate: failed.then_some(rate + rate / 7) },
        requests: 1000,
        failures: 0,
        dropped_iterations: 0,
        latency_ms: Latency::default(),
        endpoints: BTreeMap::new(),
        retired: None,
    }
}

/// A round of three repeats whose targets passed `rates` (PostgreSQL, MongoDB) req/s, each
/// stopped by its own database (PostgreSQL's first repeat of `read` never failed).
fn round(name: &str, weights: &[(&str, u32)], rates: [(u32, u32); 3]) -> RoundResult {
    let limit = |rate| Limit { step: 3, rate, kind: LimitKind::Database, text: String::new(), evidence: None };
    let repeats: Vec<RepeatResult> = rates
        .iter()
        .enumerate()
        .map(|(i, (pg, mongo))| {
            let mut cpu = CpuReport::default();
            let pg_failed = !(name == "read" && i == 0);
            if pg_failed {
                cpu.limits.insert("pg".into(), limit(*pg));
            }
            cpu.limits.insert("mongo".into(), limit(*mongo));
            RepeatResult {
                index: i as u32 + 1,
                reseeded: true,
                started_at: "2026-12-07T06:00:00.000Z".into(),
                fairness: Fairness { ok: true, checks: Vec::new() },
                start: None,
                run_seconds: 40.0,
                stopped_early: false,
                targets: BTreeMap::from([
                    ("pg".into(), target(*pg, pg_failed)),
                    ("mongo".into(), target(*mongo, true)),
                ]),
                explain: Default::default(),
                cpu,
                files: BTreeMap::new(),
                notes: Vec::new(),
                load_generator: None,
                fleet: None,
                plan: None,
                superseded: None,
            }
        })
        .collect();
    let summary = |runs: Vec<u32>, lower_bound| {
        let mut sorted = runs.clone();
        sorted.sort_unstable();
        RateSummary { median: f64::from(sorted[1]), min: sorted[0], max: sorted[2], runs, lower_bound }
    };
    RoundResult {
        name: name.into(),
        mix: name.into(),
        mix_weights: weights.iter().map(|(e, w)| ((*e).to_owned(), *w)).collect(),
        started_at: "2026-12-07T06:00:00.000Z".into(),
        finished_at: "2026-12-07T06:10:00.000Z".into(),
        plan: RatePlan {
            start_rate: 500,
            step: 0,
            max_rate: 10_000,
            step_seconds: Duration::from_secs(3),
            factor: Some(1.15),
        },
        pass_mark: PassMark::default(),
        data_set: Some(DataSet {
            seed: 1,
            orders: 100_000,
            customers: 10_000,
            products: 10_000,
            items_per_order: 3,
            note_bytes: 0,
            approx_doc_bytes: 630,
        }),
        machine: Machine { cores: 2, os: "Linux test".into() },
        commit: Some("abc1234".into()),
        targets: Vec::new(),
        fairness_overridden: false,
        budget: Some("0.25 CPU and 4.0 GiB each (cgroup v1, 10 ms quota period)".into()),
        plan_probe: None,
        max_rate: BTreeMap::from([
            ("pg".into(), summary(rates.iter().map(|r| r.0).collect(), name == "read")),
            ("mongo".into(), summary(rates.iter().map(|r| r.1).collect(), false)),
        ]),
        repeats,
        regime: None,
        dir: name.into(),
    }
}

/// The four mixes of a demo, with the spreads and verdicts of a real one (20261207-demo-C).
fn demo() -> Vec<RoundResult> {
    vec![
        round("read", &[("read", 100)], [(8300, 2800), (9500, 2800), (8300, 3200)]),
        round("insert", &[("insert", 100)], [(1500, 1200), (1500, 1100), (1500, 1200)]),
        round("status", &[("status", 100)], [(810, 810), (810, 890), (810, 810)]),
        round("shop", &[("read", 60), ("product", 30), ("insert", 10)], [(1500, 1500), (1100, 1100), (1100, 970)]),
    ]
}

fn report(out: &Path, rounds: Vec<RoundResult>) {
    let rounds: Vec<(PathBuf, RoundResult)> = rounds.into_iter().map(|r| (out.join(&r.name), r)).collect();
    orders_bench_report::write(out, &rounds).expect("report");
}

#[test]
fn the_report_opens_with_one_sentence_per_mix_and_the_chart_then_folds_the_reasoning() {
    let out = std::env::temp_dir().join(format!("orders-bench-sentences-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut rounds = demo();
    let mut machine = round("customer", &[("customer", 100)], [(2000, 1000), (2100, 1000), (2000, 900)]);
    for repeat in &mut machine.repeats {
        repeat.cpu.limits.get_mut("mongo").expect("limit").kind = LimitKind::LoadGenerator;
    }
    rounds.push(machine);
    report(&out, rounds);
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    let expected = [
        "- **Reads**: PostgreSQL held at least 2.96× MongoDB's rate, 2.59–3.39 within the three repeats; both stopped \
         by their own database.",
        "- **Inserts**: no clear winner: PostgreSQL's rate was 1.25–1.36× MongoDB's within the three repeats, in some \
         repeat less than one staircase step past the 20% a winner needs: a lead that thin must hold in 5 repeats (it \
         held in 3); both stopped by their own database.",
        "- **Status updates**: no clear winner: MongoDB passed the higher rate in repeat 2 (PostgreSQL's rate was \
         0.91–1.00× MongoDB's within the three repeats); both stopped by their own database.",
        "- **Shop (read 60, product 30, insert 10)**: no clear winner: PostgreSQL's rate was 1.00–1.13× MongoDB's \
         within the three repeats, under the 20% a winner needs; both stopped by their own database; **unstable**: \
         repeats spread more than ±25% around their median.",
        "- **A customer's orders**: not database-limited, no winner: PostgreSQL's rate was 2.00–2.22× MongoDB's within \
         the three repeats; PostgreSQL stopped by its own database, MongoDB not by its database (load generator ×3).",
    ];
    let opening = format!("# PostgreSQL jsonb vs MongoDB: orders-bench report\n\n{}\n\n![", expected.join("\n"));
    assert!(md.starts_with(&opening), "the sentences first, then the chart:\n{md}");
    assert!(md.contains("](charts/repeats.svg)\n\n## How it was measured"), "{md}");
    let svg = std::fs::read_to_string(out.join("charts/repeats.svg")).expect("the chart's file");
    assert_eq!(svg.matches("class=\"dot\"").count(), 5 * 3 * 2, "a dot per mix, repeat and target");
    assert!(svg.contains("(logarithmic scale)") && svg.contains(">PostgreSQL ≥ 2.96×<"), "{svg}");

    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let (before, after) = html.split_once("<h2>Maximum passing rate</h2>").expect("the table's heading");
    assert!(before.contains("<ul class=\"answer\"><li><strong>Reads</strong>:"), "{before}");
    assert!(before.find("<ul class=\"answer\">") < before.find("<svg"), "the sentences before the chart");
    assert!(
        after.contains("</table>\n<details><summary>How a winner is named"),
        "the table, then its reasoning folded: {after}"
    );
    assert_eq!(html.matches("<details>").count(), 1 + 5, "the reasoning and each round's details are folded");
    assert!(html.contains("<h2>Round <code>read</code></h2>\n<p>Mix <code>read</code>"), "a round's heading stays");
    let _ = std::fs::remove_dir_all(&out);
}

/// Writes every measure the test judges into the page, as JSON in `<pre id="layout">`.
const MEASURE: &str = r#"<script>
(function () {
  const box = (e) => { const r = e.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height }; };
  const answer = document.querySelector('.answer');
  const svg = document.querySelector('svg');
  const chart = svg ? box(svg) : null;
  const dots = svg ? Array.from(svg.querySelectorAll('.dot')).map(box) : [];
  const out = {
    sentences: answer ? Array.from(answer.querySelectorAll('li')).map((li) => ({ text: li.textContent, box: box(li) })) : [],
    chart: chart,
    chart_class: svg ? svg.getAttribute('class') : null,
    dots: dots,
    page_width: document.documentElement.scrollWidth,
    viewport: { width: window.innerWidth, height: window.innerHeight },
  };
  const pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

fn chromium() -> String {
    let program = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    let found = Command::new(&program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "no Chromium (`{program}`): this test opens the report in a headless browser. Install it with \
         `bash scripts/chromium.sh install` (Debian's pinned package; scripts/test.sh runs it), or set CHROMIUM \
         to a Chromium binary"
    );
    program
}

/// Runs headless Chromium at 1280 × 800 with `args` and the page, and returns its stdout.
fn headless(program: &str, args: &[&str], page: &Path) -> String {
    let profile = page.with_file_name("chromium-profile");
    let mut child = Command::new(program)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"])
        .arg("--window-size=1280,800")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting chromium");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("waiting for chromium").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium took more than 120 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().expect("chromium's output");
    assert!(output.status.success(), "chromium {args:?} failed: {}", output.status);
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The width and height a PNG's header gives.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20))
}

#[test]
fn the_first_screen_at_1280_by_800_holds_the_answer_sentences_and_the_chart_of_every_repeat() {
    let program = chromium();
    let out = std::env::temp_dir().join(format!("orders-bench-first-screen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    report(&out, demo());

    let screenshot = out.join("first-screen.png");
    headless(&program, &[&format!("--screenshot={}", screenshot.display())], &out.join("report.html"));
    let png = std::fs::read(&screenshot).expect("the screenshot");
    assert_eq!(png_size(&png), (1280, 800), "the screenshot is the first screen");

    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let measured = out.join("measured.html");
    std::fs::write(&measured, html.replace("</body>", &format!("{MEASURE}</body>"))).expect("measured page");
    let dom = headless(&program, &["--dump-dom", "--virtual-time-budget=2000"], &measured);
    let json = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("the measuring script wrote nothing: {dom}"))
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let layout: serde_json::Value = serde_json::from_str(&json).expect("the layout's JSON");
    let num = |v: &serde_json::Value, key: &str| v[key].as_f64().unwrap_or(f64::NAN);
    let screen = 800.0;

    let sentences = layout["sentences"].as_array().cloned().unwrap_or_default();
    assert_eq!(sentences.len(), 4, "one answer sentence per mix, in a list of class `answer`: {layout}");
    for (sentence, mix) in sentences.iter().zip(["Reads", "Inserts", "Status updates", "Shop"]) {
        let text = sentence["text"].as_str().unwrap_or_default();
        assert!(text.starts_with(mix), "the sentence names its mix first: {text}");
        assert!(num(&sentence["box"], "height") > 0.0, "the sentence is drawn: {text}");
        assert!(num(&sentence["box"], "bottom") <= screen, "the sentence is on the first screen: {layout}");
    }
    let read = sentences[0]["text"].as_str().unwrap_or_default();
    assert!(read.contains("PostgreSQL held at least 2.96× MongoDB's rate"), "{read}");

    let chart = &layout["chart"];
    assert_eq!(layout["chart_class"], "answer-dots", "the first chart is the one of every repeat: {layout}");
    assert!(num(chart, "width") >= 900.0, "the chart is at least 900 px wide: {chart}");
    assert!(num(chart, "height") >= 200.0, "the chart has a height: {chart}");
    assert!(num(chart, "bottom") <= screen, "the whole chart is on the first screen: {chart}");
    assert!(num(chart, "top") >= num(&sentences[3]["box"], "bottom"), "the chart follows the sentences: {layout}");
    let dots = layout["dots"].as_array().cloned().unwrap_or_default();
    assert_eq!(dots.len(), 4 * 3 * 2, "a dot per mix, repeat and target: {layout}");
    for dot in &dots {
        assert!(num(dot, "width") > 0.0, "a dot with no size: {dot}");
        let inside = num(dot, "left") >= num(chart, "left")
            && num(dot, "right") <= num(chart, "right")
            && num(dot, "top") >= num(chart, "top")
            && num(dot, "bottom") <= num(chart, "bottom");
        assert!(inside, "a dot outside the chart: {dot} in {chart}");
    }
    assert!(num(&layout, "page_width") <= 1280.0, "the page scrolls sideways: {layout}");
    let _ = std::fs::remove_dir_all(&out);
}
